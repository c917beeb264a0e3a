//! Types and paths as text: tokens joined without whitespace, except one space
//! between two adjacent words (`dyn Trait`, `'a str`). Used in messages and in the
//! schema manifest, so both spell a type the same way.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;

pub fn normalize_tokens(tokens: TokenStream) -> String {
    let mut out = String::new();
    push_tokens(&mut out, tokens, &mut false);
    out
}

fn push_tokens(out: &mut String, tokens: TokenStream, prev_word: &mut bool) {
    for tt in tokens {
        match tt {
            TokenTree::Ident(ident) => push_word(out, &ident.to_string(), prev_word),
            TokenTree::Literal(lit) => push_word(out, &lit.to_string(), prev_word),
            TokenTree::Punct(p) => {
                // `'a` is a punct followed by a word, so it stays together.
                out.push(p.as_char());
                *prev_word = false;
            }
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                *prev_word = false;
                push_tokens(out, g.stream(), prev_word);
                out.push_str(close);
                *prev_word = false;
            }
        }
    }
}

fn push_word(out: &mut String, word: &str, prev_word: &mut bool) {
    if *prev_word {
        out.push(' ');
    }
    out.push_str(word);
    *prev_word = true;
}

pub fn type_text(ty: &syn::Type) -> String {
    normalize_tokens(ty.to_token_stream())
}
