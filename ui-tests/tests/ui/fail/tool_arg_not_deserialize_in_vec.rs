//! A non-`Deserialize` type inside `Vec<_>`: the error is on the parameter's type.

use schemars::JsonSchema;
use stategraph_agent::tool;

#[derive(JsonSchema)]
struct Place {
    city: String,
}

/// Plan a trip.
#[tool]
fn plan_trip(stops: Vec<Place>) -> String {
    stops.into_iter().map(|p| p.city).collect()
}

fn main() {}
