"""The teaching course's exercise checkers, one module per lesson."""
