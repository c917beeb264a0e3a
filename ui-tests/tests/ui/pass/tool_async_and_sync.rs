//! `async` and plain functions both become tools; both stay callable as `run`.
#![deny(warnings)]

use stategraph_agent::{Tool, Tools, tool};

/// Shout a word.
#[tool]
fn shout(word: String) -> String {
    word.to_uppercase()
}

/// Whisper a word.
#[tool]
async fn whisper(word: String) -> String {
    word.to_lowercase()
}

pub fn main() {
    let tools = Tools::new().with(shout).with(whisper);
    assert_eq!(tools.names().collect::<Vec<_>>(), ["shout", "whisper"]);
    let args = serde_json::json!({"word": "Hi"});
    let loud = futures::executor::block_on(tools.call("shout", args.clone()));
    let quiet = futures::executor::block_on(whisper.call(args));
    assert_eq!((loud, quiet), (Ok("HI".to_string()), Ok("hi".to_string())));
    assert_eq!(shout::run("a".into()), "A");
    assert_eq!(futures::executor::block_on(whisper::run("B".into())), "b");
}
