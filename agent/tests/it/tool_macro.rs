//! `#[tool]`: the schema a tool describes itself with, and what its calls do with
//! good and bad arguments. Every assertion is on the JSON or text actually produced.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stategraph_agent::{Json, Tool, ToolError, Tools, tool};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    Celsius,
    Fahrenheit,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Place {
    city: String,
    /// ISO country code.
    country: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Filter {
    Any,
    Near { km: u32 },
}

/// Get the weather forecast for a city.
///
/// Temperatures are whole degrees.
#[tool]
async fn get_weather(
    /// The city, e.g. `Paris`.
    city: String,
    /// The day; today when left out.
    day: Option<String>,
    units: Units,
) -> String {
    let unit = match units {
        Units::Celsius => "C",
        Units::Fahrenheit => "F",
    };
    format!("{city} {}: 21{unit}", day.as_deref().unwrap_or("today"))
}

/// Find places.
#[tool]
fn find(place: Place, filters: Vec<Filter>, limit: Option<u8>) -> Json<Value> {
    Json(json!({
        "city": place.city,
        "country": place.country,
        "km": filters.iter().map(|f| match f {
            Filter::Any => 0,
            Filter::Near { km } => *km,
        }).sum::<u32>(),
        "limit": limit,
    }))
}

#[test]
fn per_parameter_schema_is_one_object_with_docs_and_optional_parameters() {
    let spec = get_weather.spec();
    assert_eq!(spec.name, "get_weather");
    assert_eq!(
        spec.description,
        "Get the weather forecast for a city.\n\nTemperatures are whole degrees."
    );
    assert_eq!(
        spec.parameters,
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. `Paris`."},
                "day": {"type": ["string", "null"], "description": "The day; today when left out."},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "units"],
            "additionalProperties": false,
        })
    );
}

#[test]
fn nested_structs_enums_and_vecs_are_inlined() {
    let spec = find.spec();
    let params = &spec.parameters;
    assert_eq!(params["required"], json!(["place", "filters"]));
    assert_eq!(
        params["properties"]["place"],
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "country": {"type": ["string", "null"], "description": "ISO country code."},
            },
            "required": ["city"],
        })
    );
    assert_eq!(
        params["properties"]["filters"],
        json!({
            "type": "array",
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"type": "string", "const": "any"}},
                        "required": ["kind"],
                    },
                    {
                        "type": "object",
                        "properties": {
                            "kind": {"type": "string", "const": "near"},
                            "km": {"type": "integer", "format": "uint32", "minimum": 0},
                        },
                        "required": ["kind", "km"],
                    },
                ],
            },
        })
    );
    assert_eq!(
        params["properties"]["limit"],
        json!({"type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255})
    );
    assert!(!params.to_string().contains("$ref"), "{params}");
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Shape {
    Point,
    Circle { radius: f64 },
    Square(f64),
}

/// Measure a shape's area.
#[tool]
fn area(shape: Shape) -> String {
    // Not `let area = ..`: `area` is the tool's unit struct, so that would be a pattern.
    let measured = match shape {
        Shape::Point => 0.0,
        Shape::Circle { radius } => 3.0 * radius * radius,
        Shape::Square(side) => side * side,
    };
    measured.to_string()
}

#[tokio::test]
async fn externally_tagged_enums_with_data_variants() {
    assert_eq!(
        area.spec().parameters["properties"]["shape"],
        json!({
            "oneOf": [
                {"type": "string", "enum": ["point"]},
                {
                    "type": "object",
                    "properties": {
                        "circle": {
                            "type": "object",
                            "properties": {"radius": {"type": "number", "format": "double"}},
                            "required": ["radius"],
                        },
                    },
                    "required": ["circle"],
                    "additionalProperties": false,
                },
                {
                    "type": "object",
                    "properties": {"square": {"type": "number", "format": "double"}},
                    "required": ["square"],
                    "additionalProperties": false,
                },
            ],
        })
    );
    assert_eq!(area.call(json!({"shape": "point"})).await, Ok("0".into()));
    assert_eq!(
        area.call(json!({"shape": {"circle": {"radius": 2.0}}}))
            .await,
        Ok("12".into())
    );
    assert_eq!(
        area.call(json!({"shape": {"square": 3.0}})).await,
        Ok("9".into())
    );
    assert_eq!(
        area.call(json!({"shape": {"triangle": 1.0}})).await,
        bad(
            "area",
            "`shape`: unknown variant `triangle`, expected one of `point`, `circle`, `square`"
        )
    );
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

/// List the labels of a tree, depth first.
#[tool]
fn labels(tree: Tree) -> String {
    fn walk(t: &Tree, out: &mut Vec<String>) {
        out.push(t.label.clone());
        t.children.iter().for_each(|c| walk(c, out));
    }
    let mut out = Vec::new();
    walk(&tree, &mut out);
    out.join(" ")
}

#[tokio::test]
async fn recursive_types_keep_their_definitions_inside_the_object() {
    let params = labels.spec().parameters;
    let inner = json!({
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
        },
        "required": ["label", "children"],
    });
    assert_eq!(params["properties"]["tree"], inner);
    // The reference points into the object's own definitions.
    assert_eq!(params["$defs"], json!({"Tree": inner}));
    let tree = json!({"tree": {"label": "a", "children": [{"label": "b", "children": []}]}});
    assert_eq!(labels.call(tree).await, Ok("a b".to_string()));
}

/// A search query.
#[derive(Debug, Deserialize, JsonSchema)]
struct Query {
    /// What to look for.
    text: String,
    /// How many hits at most.
    #[serde(default)]
    limit: Option<u32>,
}

/// Search the docs.
#[tool(name = "doc-search")]
async fn search(#[args] q: Query) -> Result<String, SearchError> {
    if q.text.is_empty() {
        return Err(SearchError);
    }
    Ok(format!("{} hits for {}", q.limit.unwrap_or(3), q.text))
}

#[derive(Debug)]
struct SearchError;

impl fmt::Display for SearchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the query is empty: say what to search for")
    }
}

#[tokio::test]
async fn args_struct_form_uses_the_structs_schema_and_serde_rules() {
    let spec = search.spec();
    assert_eq!(spec.name, "doc-search");
    assert_eq!(
        spec.parameters,
        json!({
            "description": "A search query.",
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "What to look for."},
                "limit": {
                    "type": ["integer", "null"],
                    "format": "uint32",
                    "minimum": 0,
                    "description": "How many hits at most.",
                    "default": null,
                },
            },
            "required": ["text"],
        })
    );
    assert_eq!(
        search.call(json!({"text": "reducers"})).await,
        Ok("3 hits for reducers".to_string())
    );
    assert_eq!(
        search.call(json!({"limit": 1})).await,
        Err(ToolError::BadArguments {
            tool: "doc-search".into(),
            message: "missing field `text`".into(),
        })
    );
}

#[tokio::test]
async fn an_err_return_is_a_failed_call() {
    let err = search.call(json!({"text": ""})).await;
    assert_eq!(
        err,
        Err(ToolError::Failed {
            tool: "doc-search".into(),
            message: "the query is empty: say what to search for".into(),
        })
    );
    assert_eq!(
        err.map_err(|e| e.to_string()),
        Err("tool `doc-search` failed: the query is empty: say what to search for".to_string())
    );
}

/// Name a type.
#[tool]
fn r#type(r#in: String, r#ref: Option<u8>) -> &'static str {
    if r#in.is_empty() || r#ref.is_some() {
        "empty"
    } else {
        "named"
    }
}

#[tokio::test]
async fn raw_identifiers_lose_their_prefix_in_names_and_properties() {
    let spec = r#type.spec();
    assert_eq!(spec.name, "type");
    assert_eq!(spec.parameters["required"], json!(["in"]));
    assert_eq!(
        spec.parameters["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["in".to_string(), "ref".to_string()])
    );
    assert_eq!(r#type.call(json!({"in": "x"})).await, Ok("named".into()));
}

#[tokio::test]
async fn good_arguments_run_the_function() {
    let tools = Tools::new().with(get_weather).with(find);
    assert_eq!(
        tools
            .call(
                "get_weather",
                json!({"city": "Paris", "day": "monday", "units": "fahrenheit"})
            )
            .await,
        Ok("Paris monday: 21F".to_string())
    );
    // An optional parameter may be left out or be null.
    assert_eq!(
        get_weather
            .call(json!({"city": "Oslo", "day": null, "units": "celsius"}))
            .await,
        Ok("Oslo today: 21C".to_string())
    );
    let found = tools
        .call(
            "find",
            json!({"place": {"city": "Lyon"}, "filters": [{"kind": "any"}, {"kind": "near", "km": 5}]}),
        )
        .await
        .map(|text| serde_json::from_str::<Value>(&text).ok());
    assert_eq!(
        found,
        Ok(Some(
            json!({"city": "Lyon", "country": null, "km": 5, "limit": null})
        ))
    );
}

fn bad(tool: &str, message: &str) -> Result<String, ToolError> {
    Err(ToolError::BadArguments {
        tool: tool.into(),
        message: message.into(),
    })
}

#[tokio::test]
async fn bad_arguments_name_the_property() {
    assert_eq!(
        get_weather.call(json!({"units": "celsius"})).await,
        bad("get_weather", "missing field `city`")
    );
    assert_eq!(
        get_weather
            .call(json!({"city": "Paris", "units": "celsius", "country": "FR"}))
            .await,
        bad(
            "get_weather",
            "`country`: unknown field `country`, expected one of `city`, `day`, `units`"
        )
    );
    assert_eq!(
        get_weather
            .call(json!({"city": 3, "units": "celsius"}))
            .await,
        bad(
            "get_weather",
            "`city`: invalid type: integer `3`, expected a string"
        )
    );
    assert_eq!(
        get_weather
            .call(json!({"city": "Paris", "units": "kelvin"}))
            .await,
        bad(
            "get_weather",
            "`units`: unknown variant `kelvin`, expected `celsius` or `fahrenheit`"
        )
    );
    assert_eq!(
        find.call(json!({"place": {"city": "Lyon"}, "filters": [{"kind": "near"}]}))
            .await,
        bad("find", "`filters[0]`: missing field `km`")
    );
    assert_eq!(
        get_weather.call(json!(["Paris"])).await,
        bad(
            "get_weather",
            "the arguments must be a JSON object of named values, not an array"
        )
    );
}

/// Say hello.
#[tool]
fn hello() {}

#[derive(Serialize)]
struct Stats {
    calls: u32,
}

/// Report statistics.
#[tool]
async fn stats() -> Result<Json<Stats>, String> {
    Ok(Json(Stats { calls: 2 }))
}

#[tokio::test]
async fn tools_without_parameters_take_an_empty_object_or_null() {
    assert_eq!(
        hello.spec().parameters,
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    );
    assert_eq!(hello.call(json!({})).await, Ok("done".to_string()));
    assert_eq!(hello.call(Value::Null).await, Ok("done".to_string()));
    assert_eq!(
        hello.call(json!({"x": 1})).await,
        bad("hello", "`x`: unknown field `x`, there are no fields")
    );
    assert_eq!(
        stats.call(json!({})).await,
        Ok(r#"{"calls":2}"#.to_string())
    );
}

#[tokio::test]
async fn the_function_stays_callable_directly() {
    assert_eq!(
        get_weather::run("Rome".into(), Some("friday".into()), Units::Celsius).await,
        "Rome friday: 21C"
    );
    assert_eq!(
        search::run(Query {
            text: String::new(),
            limit: None
        })
        .await
        .map_err(|e| e.to_string()),
        Err("the query is empty: say what to search for".to_string())
    );
    assert_eq!(r#type::run(String::new(), None), "empty");
}
