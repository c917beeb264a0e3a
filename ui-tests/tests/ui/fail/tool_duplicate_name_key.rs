//! Each `#[tool]` option is given once.

use stategraph_agent::tool;

/// Get the weather.
#[tool(name = "weather", name = "forecast")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}
