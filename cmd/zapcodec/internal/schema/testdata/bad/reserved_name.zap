struct u8
