"""Stand-in for tensorflow.python."""
