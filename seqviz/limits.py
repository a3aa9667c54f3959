"""Every bound on what a visitor can type, upload or put in a URL, in one place.

Pages and library code import these names; nothing else hard-codes a limit.
"""

import os


def _number_from_env(name: str, default: float, low: float, high: float) -> float:
    """``default``, or the environment variable ``name`` when it holds a number from low to high.

    Only for a test server (tests/load starts one that reaps closed tabs' runs within seconds); anything
    else in the variable (text, nan, out of range) is ignored and the default holds."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if low <= value <= high else default


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

# A visitor's own models (uploaded or trained in their browser), kept in their lab (seqviz.store).
MAX_UPLOAD_MB = 16  # a checkpoint file larger than this is refused before it is read (zoo files are < 1 MB)
MAX_LAB_MODELS = 8  # models one lab keeps; more are refused until one is removed
MAX_LAB_MB = 64  # bytes of checkpoints one lab keeps (the largest preset's file is about 3 MB)
MAX_MODEL_NAME_CHARS = 48  # a model's name as shown in pickers and charts (longer ones end in …)

# Models: how long a translation may run, and how large a model a checkpoint may describe.
MAX_MODEL_VOCAB = 50_000  # words in one vocabulary (the zoo's largest has a few hundred)
MAX_MODEL_WIDTH = 2048  # emb_dim, hidden, d_model, d_ff, attn_dim
MAX_MODEL_LAYERS = 8  # stacked layers of one kind
MAX_MODEL_HEADS = 32  # attention heads per layer
MAX_MODEL_POSITIONS = 4096  # max_len and max_position_shift of a transformer
MAX_MODEL_LABELS = 64  # classes of a classifier


# The lab store (seqviz.store): a lab belongs to a browser, which keeps its random key in a cookie.
LAB_KEY_BYTES = 16  # 128 random bits per lab key (22 characters of URL-safe base64)
LAB_KEEP_DAYS = _number_from_env("SEQVIZ_LAB_KEEP_DAYS", 30.0, 1.0, 3650.0)  # a lab idle this long is purged
LAB_TRANSFER_MINUTES = 10  # a "take my lab to another device" code works once, for this long
LAB_TRANSFER_CHARS = 10  # characters of that code (Crockford base32: 50 bits)
STORE_BUSY_TIMEOUT_S = 10.0  # a write waits this long for another's to end (SQLite) or for a connection
STORE_CONNECT_TIMEOUT_S = 4.0  # seconds to reach a database server before the store is called unavailable


def output_limit(source_tokens: int) -> int:
    """Longest translation decoded for a source of this many tokens (the grammar's French is under 1.5x + 5)."""
    return 2 * source_tokens + 5


# Training in the app (/train): what one visitor's run may cost a shared server.
TRAIN_MAX_PARAMETERS = 600_000  # numbers one model may learn (the zoo's largest translator has 247k)
TRAIN_MAX_STEPS = 5000  # optimisation steps of one run
TRAIN_MAX_SECONDS = 180.0  # a run still going after this many seconds of training is stopped (and kept)
TRAIN_MAX_QUEUED = 60  # runs waiting for a training worker across the server (a class of 30, twice); more are refused
TRAIN_MAX_ACTIVE_PER_OWNER = 1  # queued + training runs of one lab (so one visitor cannot fill the queue)
TRAIN_MAX_ACTIVE_PER_OWNER_MOST = 2  # the most a server may set TRAIN_MAX_ACTIVE_PER_OWNER to
# Runs train in Dask worker processes (seqviz.cluster), as many at once as the cluster has worker threads. The app's
# own cluster has one worker per core but one, and no more than memory allows: each worker is budgeted
# TRAIN_WORKER_MB after TRAIN_WEB_MB for the web server (a worker's measured peak, training the largest preset with
# the translation data loaded, with a margin: docs/training.md, "Where runs train").
TRAIN_WORKER_MB = 700
TRAIN_WEB_MB = 600
TRAIN_REPORT_EVERY_S = 0.5  # a worker sends its run's progress, and reads whether to stop, at most this often
TRAIN_MAX_KEPT_PER_OWNER = 6  # ended runs (curves, snapshots) a lab keeps; the oldest go first (not their models)
TRAIN_SAVE_EVERY_S = 5.0  # seconds of training between two saved points (model, optimiser, random states) of a run
TRAIN_SNAPSHOT_EVERY_S = 3.0  # seconds of training between two "watch it learn" snapshots
TRAIN_MAX_SNAPSHOTS = 40  # snapshots kept per run (thinned evenly when full)
# A run is stopped (and keeps what it learned) when nobody of its lab has looked at any page for this long: the
# lab's last-seen time, which every open tab of the lab writes while it polls. SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S (1 to
# 3600) sets it for one server process: the load and fault tests start theirs with a few seconds.
TRAIN_ORPHAN_TIMEOUT_S = _number_from_env("SEQVIZ_TRAIN_ORPHAN_TIMEOUT_S", 600.0, 1.0, 3600.0)
# A lab's "last seen" is written at most this often (its pages look every few seconds): well inside the timeout.
LAB_SEEN_EVERY_S = min(5.0, TRAIN_ORPHAN_TIMEOUT_S / 4)
TRAIN_EVAL_SHARE = 0.10  # at most this share of a run's time goes to measuring its held-out metric
TRAIN_WIDTH_RANGE = (4, 256)  # embedding, hidden (and d_model, d_ff) of a model trained here
TRAIN_MAX_LAYERS = 4  # layers of a model trained here
TRAIN_MAX_HEADS = 8  # attention heads of a transformer trained here
TRAIN_BATCH_RANGE = (1, 256)  # examples per step
TRAIN_LR_RANGE = (1e-5, 0.1)  # peak learning rate
TRAIN_MAX_SEED = 2**31 - 1  # seeds 0 .. this

# /explain: held-out figures are computed once per model (and cached by fingerprint), on this many held-out
# sentences or emails, spread over their lengths: a few seconds of work per model (docs/measured.md).
EXPLAIN_HELD_OUT_SENTENCES = 40  # translations: τ per output word, and exact match with attention replaced
EXPLAIN_HELD_OUT_EMAILS = 200  # the attention classifier: τ per email, and the permutation test
EXPLAIN_PERMUTATIONS = 10  # shuffles of each email's attention weights in the permutation test
# Integrated gradients of one sentence: more points along the path (seqviz.analysis.explain.importance.IG_STEPS) only
# while output words × points × source words stay within this; past it the completeness gap left is said. A chapter
# sentence gets them where few of its words need them; a long paste keeps the gap it has (said on the page).
IG_PATH_POINTS = 60_000
IG_MIN_POINTS = 8  # the fewest points along the path, for a long runaway translation

# Classes (seqviz.store.classes): a teacher's class, its members (labs) and its board of posted runs.
CLASS_CODE_CHARS = 8  # the student link's code, ?c= (Crockford base32: 40 bits, typed from a projector easily)
CLASS_KEY_BYTES = 24  # the teacher's key: 192 random bits (32 characters of URL-safe base64), kept hashed
CLASS_NAME_CHARS = 60  # a class's name, as the teacher types it
CLASS_NICKNAME_CHARS = 24  # a student's nickname on the board (longer ones are cut), shown as text
CLASS_MAX_POSTS = 300  # posts one board keeps (a class of 30, ten runs each); more are refused
CLASS_MAX_POSTS_PER_LAB = 20  # posts one student (lab) may have on one board
CLASS_MAX_VALUES = 12  # values of the one setting a class experiment varies
CLASS_KEEP_DAYS = _number_from_env("SEQVIZ_CLASS_KEEP_DAYS", 14.0, 1.0, 3650.0)  # a class idle this long is purged
CLASS_CONNECTED_S = 60.0  # a member whose lab was seen this recently counts as connected
CLASS_BOARD_REFRESH_S = 3.0  # the board looks for new posts this often

# /what-if (seqviz.analysis.decoding, beam, neighbours, state_map): what one question of a translator may cost.
WHATIF_MAX_TOP_K = 10  # most likely next words listed at each output step
WHATIF_MAX_BEAM = 8  # beam width (1 is greedy)
WHATIF_TEMPERATURE_RANGE = (0.1, 5.0)  # sampling temperature; 0 means no sampling (greedy's pick)
WHATIF_MAX_SEED = 2**31 - 1  # sampling seeds 0 .. this
WHATIF_MAX_NEIGHBOURS = 20  # nearest training states listed for one state
# A neighbour index holds the states of one model and one side (encoder or decoder), float32: at most
# WHATIF_INDEX_STATES of them and WHATIF_INDEX_MB megabytes (10,000 x 128 x 4 bytes = 4.9 MiB for the zoo's widest
# states; a wider model of a visitor's gets fewer states). A server keeps WHATIF_INDEX_MODELS indexes at once.
WHATIF_INDEX_STATES = 10_000
WHATIF_INDEX_MB = 8
WHATIF_INDEX_MODELS = 8  # so at most 64 MB of indexes
WHATIF_MAP_STATES = 3_000  # held-out encoder states on the map of states (PCA)

# /lstm-gates, "units like this" (seqviz.analysis.units_like_this): held-out cell states are replayed once per model
# (cached by fingerprint, built only when the visitor asks), on at most this many held-out sentences.
UNITS_LIKE_THIS_SENTENCES = 500  # 1.3 to 2.5 s of gate replay for the shipped LSTMs on this busy 2-core machine
UNITS_LIKE_THIS_SHOWN = 12  # matching spans listed, the strongest first
UNITS_LIKE_THIS_DRAWN = 10  # units drawn as lines across the sentence (the strongest; all of them are searched)
UNITS_LIKE_THIS_THRESHOLD = (0.0, 3.0)  # the threshold ℓ on the cell state c_t
UNITS_LIKE_THIS_MAX_PHRASE = 8  # words in the phrase picked
