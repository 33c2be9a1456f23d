fn main() {
    println!("timewarp {}", env!("CARGO_PKG_VERSION"));
}
