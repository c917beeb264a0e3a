//! `#[tool]` goes on a free function.

use stategraph_agent::tool;

struct Weather;

impl Weather {
    /// Get the weather.
    #[tool]
    async fn get_weather(&self, city: String) -> String {
        city
    }
}

fn main() {}
