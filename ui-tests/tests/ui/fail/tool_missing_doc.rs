//! A tool needs a description: the model reads it to decide when to call it.

use stategraph_agent::tool;

#[tool]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}
