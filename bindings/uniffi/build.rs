fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    supervisor_entry_point();
}

include!("../../core/build/supervisor_entry_point.rs");
