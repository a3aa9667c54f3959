"""seqviz: an interactive lab for the road from recurrent networks to attention.

The library never imports streamlit (``seqviz.ui`` aside), so every piece of it
can be used from a notebook or the command line.
"""

__version__ = "0.1.0"
