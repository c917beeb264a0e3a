//! A non-`Deserialize` type named by path inside a fully written `Option`.

use stategraph_agent::tool;

mod places {
    #[derive(schemars::JsonSchema)]
    pub struct Place {
        pub city: String,
    }
}

/// Get the weather.
#[tool]
fn get_weather(place: ::std::option::Option<crate::places::Place>) -> String {
    place.map(|p| p.city).unwrap_or_default()
}

fn main() {}
