package a
package a
