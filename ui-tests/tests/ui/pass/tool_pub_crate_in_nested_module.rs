//! A `pub(crate)` tool in a nested module, with a private argument type of that
#![deny(warnings)]
//! module, used from the crate root.

use stategraph_agent::{Tool, Tools};

mod tools {
    pub(crate) mod weather {
        use stategraph_agent::tool;

        #[derive(serde::Deserialize, schemars::JsonSchema)]
        pub(crate) enum Units {
            Celsius,
            Fahrenheit,
        }

        /// Get the weather.
        #[tool(name = "weather")]
        pub(crate) async fn get_weather(city: String, units: Units) -> String {
            match units {
                Units::Celsius => format!("{city}: 20C"),
                Units::Fahrenheit => format!("{city}: 68F"),
            }
        }
    }
}

pub fn main() {
    use tools::weather::{Units, get_weather};
    let tools = Tools::new().with(get_weather);
    assert_eq!(get_weather.spec().name, "weather");
    let out = futures::executor::block_on(
        tools.call("weather", serde_json::json!({"city": "Oslo", "units": "Celsius"})),
    );
    assert_eq!(out, Ok("Oslo: 20C".to_string()));
    assert_eq!(
        futures::executor::block_on(get_weather::run("Rome".into(), Units::Fahrenheit)),
        "Rome: 68F"
    );
}
