//! An argument's type must implement `Deserialize`: the model's JSON is decoded into it.

use schemars::JsonSchema;
use stategraph_agent::tool;

#[derive(JsonSchema)]
struct Place {
    city: String,
}

/// Get the weather.
#[tool]
async fn get_weather(place: Place) -> String {
    place.city
}

fn main() {}
