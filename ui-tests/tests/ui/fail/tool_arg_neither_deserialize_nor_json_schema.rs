//! A plain struct as an argument: both missing derives are named, each once.

use stategraph_agent::tool;

struct Place {
    city: String,
}

/// Get the weather.
#[tool]
fn get_weather(place: Place) -> String {
    place.city
}

fn main() {}
