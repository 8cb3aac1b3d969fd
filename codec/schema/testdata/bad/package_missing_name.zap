package
