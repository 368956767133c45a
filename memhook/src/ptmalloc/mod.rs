pub fn install() -> Result<(), &'static str> { Err("todo") }
