//! Two `Path`s, left→right and right→left, and the classifier in front of
//! them (placeholder API; the link work fills it in).
