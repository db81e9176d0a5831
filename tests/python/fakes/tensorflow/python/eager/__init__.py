"""Stand-in for tensorflow.python.eager."""
