"""Every bound on what a visitor can type, upload or put in a URL, in one place.

Pages and library code import these names; nothing else hard-codes a limit.
"""

# The sentence every page works on.
MAX_CHARS = 400  # characters accepted by the sidebar's text input (and cut from a URL's ?s=)
MAX_TOKENS = 60  # tokens a model reads; the rest are dropped with a message

# The tiny RNN of /rnn-memory.
TINY_RNN_MAX_STEPS = 60  # time steps in the recurrence
TINY_RNN_W_RANGE = (-3.0, 3.0)  # the recurrent weight w
TINY_RNN_INPUT_RANGE = (-10.0, 10.0)  # each input x_t
TINY_RNN_MAX_INPUT_CHARS = 600  # characters of the typed input sequence

# The worked attention example of /attention.
VECTOR_RANGE = (-5.0, 5.0)  # each coordinate of the query and key vectors
MAX_WORD_CHARS = 20  # a key's word label
