//! An argument's type must implement `JsonSchema`: the model is told its shape.

use serde::Deserialize;
use stategraph_agent::tool;

#[derive(Deserialize)]
struct Place {
    city: String,
}

/// Get the weather.
#[tool]
async fn get_weather(place: Place) -> String {
    place.city
}

fn main() {}
