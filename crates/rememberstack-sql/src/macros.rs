//! The declaration of a module's shared statements.

/// Declares a module's shared statements: each a documented `pub static` [`Statement`]
/// from its template, and (in tests) `ALL`, every one by name, which the module's
/// snapshot tests render in both dialects.
macro_rules! statements {
    ($($(#[$meta:meta])* $name:ident = $template:expr;)+) => {
        $($(#[$meta])* pub static $name: $crate::Statement = $crate::Statement::new($template);)+

        /// Every statement of this module, by name.
        #[cfg(test)]
        pub(crate) const ALL: &[(&str, &$crate::Statement)] = &[$((stringify!($name), &$name)),+];

        /// Every statement as each store runs it: a change to one shows here.
        #[cfg(test)]
        mod statement_snapshots {
            #[test]
            fn statements_in_sqlite() {
                insta::assert_snapshot!($crate::render_all(super::ALL, $crate::Dialect::Sqlite));
            }

            #[test]
            fn statements_in_postgres() {
                insta::assert_snapshot!($crate::render_all(super::ALL, $crate::Dialect::Postgres));
            }
        }
    };
}
