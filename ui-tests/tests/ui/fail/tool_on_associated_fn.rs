//! `#[tool]` on an associated function without `self`.

use stategraph_agent::tool;

struct Weather;

impl Weather {
    /// Get the weather.
    #[tool]
    async fn get_weather(city: String) -> String {
        city
    }
}

fn main() {}
