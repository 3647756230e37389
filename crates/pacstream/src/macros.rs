//! Crate-internal macros.

/// Serialises a type through its `#[serde(remote = "Self")]` derive and, when
/// deserialising, checks it with its `validate_snapshot(&self) -> Result<()>` method, so that a
/// corrupt or hand-edited snapshot is an error rather than a learner with broken invariants.
macro_rules! validated_snapshot {
    ($type:ty) => {
        impl ::serde::Serialize for $type {
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                <$type>::serialize(self, serializer)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $type {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                let value = <$type>::deserialize(deserializer)?;
                value
                    .validate_snapshot()
                    .map_err(<D::Error as ::serde::de::Error>::custom)?;
                Ok(value)
            }
        }
    };
}

/// The setters of a builder of parameters: `field: Type;` sets the field to the value given,
/// `field: Option<Type>;` sets it to `Some(value)` (a setting whose default is decided at
/// `check`); `setter => field: ...;` names the setter differently from the field it sets.
/// Each setter keeps the doc comment written above it and is `#[must_use]`.
macro_rules! setters {
    () => {};
    ($(#[$meta:meta])* $setter:ident => $field:ident: Option<$type:ty>; $($rest:tt)*) => {
        $(#[$meta])*
        #[must_use]
        pub fn $setter(mut self, $field: $type) -> Self {
            self.$field = Some($field);
            self
        }
        setters!($($rest)*);
    };
    ($(#[$meta:meta])* $setter:ident => $field:ident: $type:ty; $($rest:tt)*) => {
        $(#[$meta])*
        #[must_use]
        pub fn $setter(mut self, $field: $type) -> Self {
            self.$field = $field;
            self
        }
        setters!($($rest)*);
    };
    ($(#[$meta:meta])* $field:ident: Option<$type:ty>; $($rest:tt)*) => {
        $(#[$meta])*
        #[must_use]
        pub fn $field(mut self, $field: $type) -> Self {
            self.$field = Some($field);
            self
        }
        setters!($($rest)*);
    };
    ($(#[$meta:meta])* $field:ident: $type:ty; $($rest:tt)*) => {
        $(#[$meta])*
        #[must_use]
        pub fn $field(mut self, $field: $type) -> Self {
            self.$field = $field;
            self
        }
        setters!($($rest)*);
    };
}
