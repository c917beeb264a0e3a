//! A `messages` channel accepts messages, `RemoveMessage` and `RemoveAllMessages` in
//! its builder, and `apply_writes` folds them by id.

use stategraph::Message;
use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Chat {
    #[reducer(messages)]
    history: Vec<Message>,
}

pub fn main() {
    let mut chat = Chat::default();
    chat.apply_writes(vec![Write::new(
        "user",
        Chat::update().history([
            Message::user("hi").with_id("q"),
            Message::assistant("hello").with_id("a"),
        ]),
    )])
    .expect("upserts apply");
    assert_eq!(chat.history.len(), 2);

    chat.apply_writes(vec![Write::new(
        "edit",
        Chat::update()
            .history([Message::assistant("hello again").with_id("a")])
            .history([RemoveMessage::new("q")]),
    )])
    .expect("replace and remove apply");
    assert_eq!(chat.history.len(), 1);
    assert_eq!(chat.history[0].content, "hello again");

    chat.apply_writes(vec![Write::new(
        "reset",
        Chat::update()
            .history([RemoveAllMessages])
            .history([Message::user("fresh start")]),
    )])
    .expect("remove-all applies");
    assert_eq!(chat.history.len(), 1);
    assert_eq!(chat.history[0].content, "fresh start");

    let cleared = Chat::update().overwrite_history(Vec::new());
    chat.apply_writes(vec![Write::new("clear", cleared)])
        .expect("overwrite applies");
    assert!(chat.history.is_empty());
}
