//! The `fn` that `#[async_trait]` makes of an `async fn`: where the user's
//! body is in it, so that the prologue can go inside its async block, and
//! the name (`__self`) the receiver has there.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::{Block, Expr, ExprAsync, Ident, Pat, Stmt};

/// Where the user's body is in `#[async_trait]`'s rewrite of an `async fn`:
///
/// ```text
/// fn f<'life0, 'async_trait>(&'life0 self, ..) -> Pin<Box<dyn Future<Output = R> + Send + 'async_trait>> {
///     Box::pin(async move {
///         if let Some(__ret) = None::<R> { return __ret; }   // a type hint
///         let __self = self;                                  // the parameters
///         let x = x;
///         let __ret: R = { body };                            // <- the prologue goes before this
///         __ret
///     })
/// }
/// ```
pub(super) struct AsyncTraitBody<'a> {
    pub(super) block: &'a mut Block,
    pub(super) insert_at: usize,
}

/// The span of `R` in `let __ret: R = { body }`, and where the body starts.
pub(super) struct AsyncTraitShape {
    pub(super) output: Option<Span>,
    insert_at: usize,
}

/// The async block of `Box::pin(async move { .. })` (or a bare
/// `async move { .. }`), the last expression of `block`.
fn async_block(block: &Block) -> Option<&ExprAsync> {
    match block.stmts.last()? {
        Stmt::Expr(Expr::Async(body), None) => Some(body),
        Stmt::Expr(Expr::Call(call), None) if is_box_pin(&call.func) && call.args.len() == 1 => {
            match call.args.first()? {
                Expr::Async(body) => Some(body),
                _ => None,
            }
        }
        _ => None,
    }
}

fn async_block_mut(block: &mut Block) -> Option<&mut ExprAsync> {
    match block.stmts.last_mut()? {
        Stmt::Expr(Expr::Async(body), None) => Some(body),
        Stmt::Expr(Expr::Call(call), None) if is_box_pin(&call.func) && call.args.len() == 1 => {
            match call.args.first_mut()? {
                Expr::Async(body) => Some(body),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `Box::pin`, `::std::boxed::Box::pin`…
fn is_box_pin(func: &Expr) -> bool {
    let Expr::Path(path) = func else {
        return false;
    };
    let segments: Vec<&Ident> = path.path.segments.iter().map(|s| &s.ident).collect();
    matches!(segments.as_slice(), [.., boxed, pin] if *boxed == "Box" && *pin == "pin")
}

/// The shape of an `#[async_trait]` body, if `block` is one.
pub(super) fn async_trait_body(block: &Block) -> Option<AsyncTraitShape> {
    let body = async_block(block)?;
    let stmts = &body.block.stmts;
    // `let __ret: R = { body };` or `let _: () = { body };`
    let typed = stmts.iter().enumerate().find_map(|(i, stmt)| match stmt {
        Stmt::Local(local) => match (&local.pat, &local.init) {
            (Pat::Type(typed), Some(init)) if matches!(*init.expr, Expr::Block(_)) => {
                let output = match &*typed.pat {
                    Pat::Ident(p) if p.ident == "__ret" => Some(typed.ty.span()),
                    _ => None,
                };
                Some(AsyncTraitShape {
                    output,
                    insert_at: i,
                })
            }
            _ => None,
        },
        _ => None,
    });
    // An associated `impl Trait` output: the body is the last block.
    typed.or_else(|| match stmts.last() {
        Some(Stmt::Expr(Expr::Block(_), None)) => Some(AsyncTraitShape {
            output: None,
            insert_at: stmts.len() - 1,
        }),
        _ => None,
    })
}

pub(super) fn async_trait_body_mut(block: &mut Block) -> Option<AsyncTraitBody<'_>> {
    let AsyncTraitShape { insert_at, .. } = async_trait_body(block)?;
    let body = async_block_mut(block)?;
    Some(AsyncTraitBody {
        block: &mut body.block,
        insert_at,
    })
}

/// `self` (a value, not a path `self::..`) becomes `__self`, the name
/// async-trait binds the receiver to in its async block.
pub(super) fn rename_self(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        let next_is_path = matches!(
            (trees.get(i + 1), trees.get(i + 2)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && b.as_char() == ':'
        );
        out.push(match tree {
            TokenTree::Ident(ident) if ident == "self" && !next_is_path => {
                TokenTree::Ident(Ident::new("__self", ident.span()))
            }
            TokenTree::Group(group) => {
                let mut renamed = Group::new(group.delimiter(), rename_self(group.stream()));
                renamed.set_span(group.span());
                TokenTree::Group(renamed)
            }
            other => other.clone(),
        });
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    #[test]
    fn rename_self_leaves_paths_alone() {
        let out = rename_self(quote!(self.a + self::b(self)));
        assert_eq!(out.to_string(), "__self . a + self :: b (__self)");
    }
}
