//! `name = ""` is not a name a model can call.

use stategraph_agent::tool;

/// Get the weather.
#[tool(name = "")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}
