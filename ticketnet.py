"""ticketnet: the shared library of the transformer-block course.

Everything the notebooks use but do not teach lives here, in reading order:

1. the Larkfield tickets: teams, loading and checking a split;
2. words to numbers: tokenizer, vocabulary, padded id tensors, labels;
3. reproducibility and counting: seeds and parameter counts;
4. attention, as the previous lesson built it;
5. the routers: TinyTransformer, a bag-of-words network, an average-embedding network and
   TF-IDF + logistic regression;
6. training and evaluation, with batches grouped by length;
7. Banking77, a real public data set, downloaded at a pinned commit and verified;
8. plots of training curves and accuracies.

What it does not hold: any answer a section asks the student to write. The course builds
multi-head attention, positions, layer norm, the feed-forward layer and the block by hand in the
notebooks; this file uses PyTorch's own layers for them.
"""

import csv
import hashlib
import math
import os
import random
import re
import sys
import urllib.request
from collections import Counter, namedtuple
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data"

# ---------------------------------------------------------------------------------------------
# 1. The Larkfield tickets
# ---------------------------------------------------------------------------------------------

TEAMS = ("delivery", "returns", "payment", "warranty", "account")
COLUMNS = ("ticket_id", "text", "team", "style")
PAD = 0  # id of the padding token: fills short rows, never read by attention or pooling
UNK = 1  # id of every word the vocabulary does not know
MAX_TOKENS = 120  # rows are cut to this many tokens; TinyTransformer's position table has as many


class DataError(ValueError):
    """A data file that cannot be used as it is; the message names the file and the line."""


def load_split(path):
    """Read one split of the tickets into a list of dicts with the keys of COLUMNS.

    Refuses a file with a missing column, a short (truncated) row, an unknown team or an empty
    text, naming the file and the line, rather than failing later with a bare KeyError.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file (the splits are data/train.csv, valid.csv, test.csv)")
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                raise DataError(f"{path}: the file is empty; expected a header {','.join(COLUMNS)}")
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise DataError(f"{path}: line 1: missing column(s) {', '.join(missing)}; "
                                f"expected the header {','.join(COLUMNS)}, found {','.join(header)}")
            where = {c: header.index(c) for c in COLUMNS}
            for fields in reader:
                line = reader.line_num
                if not fields:
                    continue
                if len(fields) != len(header):
                    raise DataError(f"{path}: line {line}: {len(fields)} fields where the header has "
                                    f"{len(header)}; is the file truncated or a comma unquoted?")
                row = {c: fields[i] for c, i in where.items()}
                if row["team"] not in TEAMS:
                    raise DataError(f"{path}: line {line}: unknown team {row['team']!r}; "
                                    f"expected one of {', '.join(TEAMS)}")
                if not row["text"].strip():
                    raise DataError(f"{path}: line {line}: empty text in ticket {row['ticket_id']!r}")
                rows.append(row)
        except csv.Error as error:
            raise DataError(f"{path}: line {reader.line_num}: not valid CSV ({error}); "
                            "is the file truncated?") from None
    if not rows:
        raise DataError(f"{path}: a header but no tickets")
    return rows


# ---------------------------------------------------------------------------------------------
# 2. Words to numbers
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\w\s]")


def tokenize(text):
    """Lower-case words (with their apostrophe endings) and punctuation marks, in order."""
    if not isinstance(text, str):
        raise TypeError(f"tokenize takes a string, got {type(text).__name__}")
    return _TOKEN.findall(text.lower())


class Vocab:
    """The words seen at least `min_count` times in `texts`, most frequent first.

    Id 0 is the padding token and id 1 the unknown word, so the first real word has id 2.
    """

    def __init__(self, texts, min_count=2):
        if isinstance(texts, str):
            raise TypeError("Vocab takes a list of texts, got one string")
        if min_count < 1:
            raise ValueError(f"min_count must be at least 1, got {min_count}")
        counts = Counter(token for text in texts for token in tokenize(text))
        kept = sorted((t for t, n in counts.items() if n >= min_count), key=lambda t: (-counts[t], t))
        self.itos = ["<pad>", "<unk>"] + kept
        self.stoi = {token: i for i, token in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def encode(self, text):
        return [self.stoi.get(token, UNK) for token in tokenize(text)]

    def decode(self, ids):
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else ids
        return " ".join(self.itos[i] for i in ids if i != PAD)


def _texts(rows):
    """Accept row dicts (with a "text" key) or plain strings."""
    return [row if isinstance(row, str) else row["text"] for row in rows]


def token_ids(rows, vocab, max_tokens=MAX_TOKENS):
    """A LongTensor (rows, longest row) of token ids, each row cut to `max_tokens`, padded with PAD."""
    encoded = [vocab.encode(text)[:max_tokens] for text in _texts(rows)]
    if not encoded:
        raise ValueError("token_ids needs at least one row")
    longest = max(1, max(len(ids) for ids in encoded))
    out = torch.full((len(encoded), longest), PAD, dtype=torch.long)
    for i, ids in enumerate(encoded):
        out[i, :len(ids)] = torch.tensor(ids, dtype=torch.long)
    return out


def labels(rows, classes=TEAMS, column="team"):
    """A LongTensor of class indices: the position of each row's `column` in `classes`."""
    index = {name: i for i, name in enumerate(classes)}
    unknown = sorted({row[column] for row in rows} - index.keys())
    if unknown:
        raise ValueError(f"unknown {column} {unknown[:5]}; expected one of {list(classes)[:8]}...")
    return torch.tensor([index[row[column]] for row in rows], dtype=torch.long)


# ---------------------------------------------------------------------------------------------
# 3. Reproducibility and counting
# ---------------------------------------------------------------------------------------------

def set_seed(seed):
    """Seed Python, NumPy and PyTorch, so that weights, batch orders and dropout repeat."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def count_parameters(module):
    """The number of numbers in a module's parameters, trainable or not."""
    return sum(p.numel() for p in module.parameters())


# ---------------------------------------------------------------------------------------------
# 4. Attention (the previous lesson's function)
# ---------------------------------------------------------------------------------------------

def attention(q, k, v, mask=None):
    """Scaled dot-product attention over the last two dimensions.

    q: (..., S, D), k and v: (..., S_k, D). `mask` is a bool tensor with as many dimensions as the
    scores (..., S, S_k), True where a key is blocked (a pad). Returns (output, weights).
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., S, S_k)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor (True where a key is blocked), got {mask.dtype}")
        if mask.dim() != scores.dim():
            raise ValueError(f"mask has {mask.dim()} dimensions {tuple(mask.shape)} but the scores have "
                             f"{scores.dim()} {tuple(scores.shape)}; insert size-1 dimensions so that it "
                             "broadcasts, for heads a padding mask is (batch, 1, 1, keys)")
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


# ---------------------------------------------------------------------------------------------
# 5. The routers
# ---------------------------------------------------------------------------------------------

def _mean_over_tokens(h, ids):
    """Average h (B, T, D) over the real (non-PAD) tokens of each row: (B, D)."""
    keep = (ids != PAD).unsqueeze(-1).to(h.dtype)  # (B, T, 1)
    return (h * keep).sum(1) / keep.sum(1).clamp(min=1)


class TinyTransformer(nn.Module):
    """Token and position embeddings, pre-norm encoder blocks, a final norm, the mean of the real
    tokens and a linear layer to one score per class. `dropout` acts on each block's attention
    and feed-forward outputs, before they join the residual stream."""

    def __init__(self, vocab_size, dim=64, heads=4, blocks=2, ffn=256, max_tokens=MAX_TOKENS,
                 dropout=0.1, classes=len(TEAMS), positions=True):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=PAD)
        self.position = nn.Embedding(max_tokens, dim) if positions else None
        layer = nn.TransformerEncoderLayer(dim, heads, ffn, dropout=dropout,
                                           batch_first=True, norm_first=True)
        # Dropout only where each branch rejoins the residual stream. Dropping attention weights
        # keeps PyTorch off its fused attention while training, and the mask over the feed-forward's
        # inner width (four times the model's) is the largest of the block.
        layer.self_attn.dropout = 0.0
        layer.dropout = nn.Identity()
        self.blocks = nn.TransformerEncoder(layer, blocks, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, classes)

    def forward(self, ids):  # ids: (B, T)
        h = self.embed(ids)  # (B, T, D)
        if self.position is not None:
            limit = self.position.num_embeddings
            if ids.shape[1] > limit:
                raise ValueError(f"cannot read a sequence of {ids.shape[1]} tokens, "
                                 f"the position table has {limit}")
            h = h + self.position(torch.arange(ids.shape[1], device=ids.device))
        h = self.blocks(h, src_key_padding_mask=ids == PAD)  # (B, T, D)
        return self.out(_mean_over_tokens(self.norm(h), ids))  # (B, classes)


class BagOfWordsNet(nn.Module):
    """Which words a ticket contains (order and counts ignored), through one hidden layer."""

    def __init__(self, vocab_size, hidden=64, dropout=0.1, classes=len(TEAMS)):
        super().__init__()
        self.vocab_size = vocab_size
        self.hidden = nn.Linear(vocab_size, hidden)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, classes)

    def forward(self, ids):  # ids: (B, T)
        present = torch.zeros(ids.shape[0], self.vocab_size, device=ids.device)
        present.scatter_(1, ids, 1.0)
        present[:, PAD] = 0.0  # (B, V): 1 where the word occurs
        return self.out(self.dropout(torch.relu(self.hidden(present))))


class AverageEmbeddingNet(nn.Module):
    """The average of a ticket's word vectors, then a linear layer: blind to word order."""

    def __init__(self, vocab_size, dim=64, classes=len(TEAMS)):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=PAD)
        self.out = nn.Linear(dim, classes)

    def forward(self, ids):  # ids: (B, T)
        return self.out(_mean_over_tokens(self.embed(ids), ids))


class TfidfRouter:
    """TF-IDF features of words and word pairs, then logistic regression (scikit-learn).

    Takes rows (dicts with "text" and the label column) or texts with separate labels.
    """

    def __init__(self, C=10.0, column="team"):
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        self.column = column
        self.model = make_pipeline(
            TfidfVectorizer(tokenizer=tokenize, lowercase=False, token_pattern=None,
                            ngram_range=(1, 2), sublinear_tf=True),
            # Newton-CG reaches the same optimum as the default L-BFGS (the same calls on every
            # ticket here) in a seventh of the time, and it runs no SciPy solver: scikit-learn 1.6
            # hands L-BFGS an option that newer SciPy warns about, on Colab's versions among others.
            LogisticRegression(C=C, max_iter=2000, solver="newton-cg"))

    def _labels(self, rows, y):
        return [row[self.column] for row in rows] if y is None else list(y)

    def fit(self, rows, y=None):
        self.model.fit(_texts(rows), self._labels(rows, y))
        return self

    def predict(self, rows):
        return list(self.model.predict(_texts(rows)))

    def score(self, rows, y=None):
        """Accuracy on rows, a float in [0, 1]."""
        return float(self.model.score(_texts(rows), self._labels(rows, y)))


# ---------------------------------------------------------------------------------------------
# 6. Training and evaluation
# ---------------------------------------------------------------------------------------------

def _lengths(ids):
    return (ids != PAD).sum(1)


def length_grouped_batches(ids, batch_size, generator, pool=50):
    """Index batches of similar length: shuffle, sort each pool of `pool` batches by length,
    cut it into batches and shuffle the batches, so that little of each batch is padding."""
    order = torch.randperm(len(ids), generator=generator)
    lengths = _lengths(ids)[order]
    batches = []
    for start in range(0, len(order), batch_size * pool):
        chunk = order[start:start + batch_size * pool]
        chunk = chunk[torch.argsort(lengths[start:start + batch_size * pool], stable=True)]
        batches += list(chunk.split(batch_size))
    return [batches[i] for i in torch.randperm(len(batches), generator=generator)]


def _trim(ids):
    """Cut the columns that are padding in every row of the batch. Rows must be padded on the
    right, as token_ids makes them: a word after a pad may be cut."""
    return ids[:, :max(1, int(_lengths(ids).max()))]


def _progress(log, total):
    """A tqdm bar when asked, or when log="auto" and a person is watching (a terminal or a
    notebook outside grading and CI); None means silence."""
    if log == "auto":
        watching = sys.stderr.isatty() or "ipykernel" in sys.modules
        quiet = os.environ.get("NBGRADER_EXECUTION") or os.environ.get("CI")
        log = "bar" if watching and not quiet else None
    if log == "bar":
        from tqdm.auto import tqdm
        return tqdm(total=total, unit="epoch", leave=False)
    return None


def train(model, ids_train, y_train, ids_valid, y_valid, epochs, lr=1e-3, batch_size=64, seed=0,
          log="auto", group_by_length=True):
    """Train with Adam and cross-entropy; return one dict per epoch:
    epoch, train_loss, train_acc (running means over the epoch), valid_loss, valid_acc.

    The same seed gives the same batches, dropout and history. `log`: "auto" (a progress bar
    when someone is watching), "bar", "epochs" (a printed line per epoch), a function called
    with each epoch's dict, or None for silence. `group_by_length=False` draws plain random
    batches, each padded to its own longest row.
    """
    if len(ids_train) != len(y_train) or len(ids_valid) != len(y_valid):
        raise ValueError(f"ids and labels differ in length: train {len(ids_train)} vs {len(y_train)}, "
                         f"valid {len(ids_valid)} vs {len(y_valid)}")
    torch.manual_seed(seed)  # dropout
    order = torch.Generator().manual_seed(seed)  # batch order
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    bar = _progress(log, epochs)
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        if group_by_length:
            batches = length_grouped_batches(ids_train, batch_size, order)
        else:
            batches = torch.randperm(len(ids_train), generator=order).split(batch_size)
        loss_sum, right = 0.0, 0
        for batch in batches:
            logits = model(_trim(ids_train[batch]))
            loss = F.cross_entropy(logits, y_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * len(batch)
            right += (logits.argmax(1) == y_train[batch]).sum().item()
        valid_loss, valid_acc = evaluate(model, ids_valid, y_valid)
        row = {"epoch": epoch, "train_loss": round(loss_sum / len(ids_train), 4),
               "train_acc": round(right / len(ids_train), 4),
               "valid_loss": round(valid_loss, 4), "valid_acc": round(valid_acc, 4)}
        history.append(row)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(valid_acc=row["valid_acc"])
        elif log == "epochs":
            print(row)
        elif callable(log):
            log(row)
    if bar is not None:
        bar.close()
    return history


@torch.no_grad()
def predict(model, ids, batch_size=256, fast_path=False):
    """The model's scores (N, classes) in evaluation mode, in the order of `ids` (padded on the
    right, as token_ids makes them). `fast_path=True` lets PyTorch run each encoder layer as one
    fused op; it was the slower choice, with the same predictions (bench/inference.py)."""
    model.eval()
    order = torch.argsort(_lengths(ids))  # similar lengths together, less padding
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(fast_path)
    try:  # the fused op builds each (T, T) score table whole; the plain layers' flash attention never does
        scores = [model(_trim(ids[batch])) for batch in order.split(batch_size)]
    finally:
        torch.backends.mha.set_fastpath_enabled(before)
    out = torch.empty(len(ids), scores[0].shape[1])
    out[order] = torch.cat(scores)
    return out


def evaluate(model, ids, y, batch_size=256):
    """(mean cross-entropy, accuracy) of the model on ids and labels, in evaluation mode."""
    scores = predict(model, ids, batch_size)
    return F.cross_entropy(scores, y).item(), (scores.argmax(1) == y).float().mean().item()


# ---------------------------------------------------------------------------------------------
# 7. Banking77
# ---------------------------------------------------------------------------------------------

BANKING77_URL = ("https://raw.githubusercontent.com/PolyAI-LDN/task-specific-datasets/"
                 "57ec275d8078af65b7731c2a98be812d844a6d6b/banking_data/{name}")
BANKING77_SHA256 = {
    "train.csv": "b06e26ac675513959a63135f11b94ea7786ed02da65db93a5650d8838cbc664b",
    "test.csv": "d12d6e3bc4c3103966ae786dc435913c0c563dfa328f5a3646d0e62cfeeb474d",
}
Banking77 = namedtuple("Banking77", "train test intents")


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _download_banking77(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for name in BANKING77_SHA256:
        target = folder / name
        if target.is_file() and _sha256(target) == BANKING77_SHA256[name]:
            continue
        url = BANKING77_URL.format(name=name)
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                data = response.read()
        except OSError as error:
            raise DataError(f"could not download Banking77's {name} from {url} ({error}). Without "
                            "internet (on Kaggle: Settings > Internet on), download train.csv and "
                            "test.csv by hand and call load_banking77(root='that folder'), or set "
                            "BANKING77_DIR to that folder for the notebooks") from None
        partial = target.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(target)


def load_banking77(root=None):
    """Banking77's training and test queries as rows {"text", "category"}, and the 77 intents.

    `root`: a folder with train.csv and test.csv. Without it (None or "", as an unset variable
    gives) the files are downloaded once from the data set's repository at a pinned commit into
    ~/.cache/ticketnet (or $TICKETNET_CACHE). Either way each file must match its SHA-256, or a
    DataError says which one differs.
    """
    if not root:
        folder = Path(os.environ.get("TICKETNET_CACHE", Path.home() / ".cache" / "ticketnet")) / "banking77"
        _download_banking77(folder)
    else:
        folder = Path(root)
    splits = {}
    for name, expected in BANKING77_SHA256.items():
        path = folder / name
        if not path.is_file():
            raise DataError(f"{path}: no such file; load_banking77(root) needs a folder with "
                            "train.csv and test.csv, or no root to download them")
        if _sha256(path) != expected:
            raise DataError(f"{path}: SHA-256 {_sha256(path)[:12]}... differs from the pinned "
                            f"{expected[:12]}...; the file is damaged or another version. "
                            "Delete it and load again.")
        with open(path, newline="", encoding="utf-8") as f:
            splits[name] = [{"text": r["text"], "category": r["category"]} for r in csv.DictReader(f)]
    intents = tuple(sorted({row["category"] for row in splits["train.csv"]}))
    return Banking77(splits["train.csv"], splits["test.csv"], intents)


def train_valid_split(rows, valid_size, seed=0):
    """Split rows into (train, valid) by a seeded shuffle; the same seed gives the same split."""
    if not 0 < valid_size < len(rows):
        raise ValueError(f"valid_size must be between 1 and {len(rows) - 1}, got {valid_size}")
    order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(seed)).tolist()
    return [rows[i] for i in order[valid_size:]], [rows[i] for i in order[:valid_size]]


# ---------------------------------------------------------------------------------------------
# 8. Plots
# ---------------------------------------------------------------------------------------------

def plot_curves(histories, key="valid_acc", lines=None, title=None, ax=None):
    """One line per run of `key` against the epoch; `lines` adds flat dashed lines (name -> value)
    for models without epochs. Returns the matplotlib Axes."""
    import matplotlib.pyplot as plt
    if ax is None:
        ax = plt.subplots(figsize=(7, 4))[1]
    for name, history in histories.items():
        ax.plot([row["epoch"] for row in history], [row[key] for row in history], marker=".", label=name)
    for name, value in (lines or {}).items():
        ax.axhline(value, linestyle="--", color="grey", label=name)
    ax.set_xlabel("epoch")
    ax.set_ylabel(key.replace("_", " "))
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


def plot_accuracies(accuracies, title=None, ax=None):
    """A bar per model (name -> accuracy in [0, 1]), each labelled with its percentage."""
    import matplotlib.pyplot as plt
    if ax is None:
        ax = plt.subplots(figsize=(7, 4))[1]
    bars = ax.bar(list(accuracies), [100 * a for a in accuracies.values()], color="tab:blue")
    ax.bar_label(bars, fmt="%.1f%%")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    if title:
        ax.set_title(title)
    return ax


# ---------------------------------------------------------------------------------------------
# 9. Your parts from earlier sections
# ---------------------------------------------------------------------------------------------

class PartError(LookupError):
    """An earlier part that cannot be read from the student's notebook; the message says why."""


_MARKER = re.compile(r"\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$")  # nbgrader's, not code


def _statements(notebook):
    """(statement, its source text) for every top-level statement of the notebook's code cells,
    in the order the cells run. Cells with IPython syntax (magics, `!`) are skipped."""
    import ast
    import json
    found = []
    for cell in json.loads(Path(notebook).read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        lines = source.splitlines()
        for node in tree.body:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            text = "\n".join(line for line in lines[first - 1:node.end_lineno] if not _MARKER.match(line))
            found.append((node, text))
    return found


def _reads(source):
    """The module-level names a statement reads: what must be defined before it runs."""
    import builtins
    import symtable
    top = symtable.symtable(source, "<part>", "exec")
    names, tables = set(), [top]
    while tables:
        table = tables.pop()
        tables += table.get_children()
        for symbol in table.get_symbols():
            if table is top and symbol.is_referenced() and not symbol.is_assigned() and not symbol.is_imported():
                names.add(symbol.get_name())
            elif table is not top and symbol.is_global():
                names.add(symbol.get_name())
    return names - set(dir(builtins))


def loads_parts(node):
    """(section, names) of a statement `A, B = load_parts("section", "A", "B")`, else None."""
    import ast
    call = getattr(node, "value", None)
    if isinstance(node, ast.Assign) and isinstance(call, ast.Call) and getattr(call.func, "id", None) == "load_parts":
        section, *names = [ast.literal_eval(a) for a in call.args]
        return section, names
    return None


def _binds(node):
    """The names a top-level def, class, import, constant or load_parts line binds (an empty set
    for anything else)."""
    import ast
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).partition(".")[0] for alias in node.names}
    if isinstance(node, ast.Assign) and all(isinstance(t, (ast.Name, ast.Tuple)) for t in node.targets):
        if loads_parts(node) is None:
            try:
                ast.literal_eval(node.value)  # a constant: cheap and safe to run again
            except ValueError:
                return set()
        return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def part_source(notebook, names):
    """The code of `notebook` that defines `names`: their top-level definitions, the definitions,
    imports and constants those read in turn, and nothing else, in the order the notebook runs
    them. A name defined twice keeps its last definition, as running the notebook would. A name the
    notebook itself loads from an earlier one (load_parts) comes with that notebook's code, so the
    result runs without reading any notebook."""
    notebook = Path(notebook)
    statements = _statements(notebook)
    last = {name: i for i, (node, _) in enumerate(statements) for name in _binds(node)}
    wanted, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in last:
            raise PartError(f"{notebook.name} defines no `{name}` in a top-level def, class, import "
                            "or constant")
        if last[name] not in wanted:
            wanted.add(last[name])
            node, text = statements[last[name]]
            todo += [] if loads_parts(node) else _reads(text)
    code = [resolved(node, notebook.parent.parent) if loads_parts(node) else text
            for node, text in (statements[i] for i in sorted(wanted))]
    return "\n\n".join(code) + "\n"


def resolved(statement, folder):
    """A `load_parts` line as code that reads no notebook: the parts' code from the notebooks
    under `folder`, run by run_parts."""
    import ast
    section, names = loads_parts(statement)
    inner = part_source(Path(folder) / section / f"{section}.ipynb", names)
    return (f"from ticketnet import run_parts\n{ast.unparse(statement.targets[0])} = "
            f"run_parts({inner!r}, {tuple(names)!r}, {section + ' (parts)'!r})")


def load_parts(section, *names, folder=".."):
    """Your own `names` (classes, functions) from your notebook of an earlier `section`, found at
    folder/section/section.ipynb (`..` is the folder above this notebook's). Runs only the
    definitions they need, never the notebook's other cells, from the notebook as last saved.
    Returns the object for one name, a tuple for several.

    The autograder runs the course's own definitions in this cell's place, so that a mistake left
    in an earlier section costs no point in this one."""
    notebook = Path(folder) / section / f"{section}.ipynb"
    if not notebook.is_file():
        raise PartError(f"no notebook {notebook.resolve()}: this cell reads your {', '.join(names)} from "
                        f"your own {section} notebook, kept in the course's folder. On Colab or Kaggle, "
                        f"or with the notebook elsewhere, paste your code of {', '.join(names)} (with "
                        "the functions it uses) into this cell instead of the load_parts line.")
    source = part_source(notebook, names)
    if "raise NotImplementedError" in source:
        raise PartError(f"your {', '.join(names)} in {notebook.name} is not written yet (its code still "
                        f"raises NotImplementedError): write it in {section} first and save that "
                        "notebook, or paste a working version into this cell")
    return run_parts(source, names, f"{notebook} (the parts read from it)")


def run_parts(source, names, where):
    """Run `source` in a namespace of its own and return its `names` (one object, or a tuple)."""
    import linecache
    linecache.cache[where] = (len(source), None, source.splitlines(True), where)  # for tracebacks
    space = {"__name__": "__main__"}  # as if defined in the notebook: torch.save can pickle them
    exec(compile(source, where, "exec"), space)
    parts = tuple(space[name] for name in names)
    return parts[0] if len(parts) == 1 else parts
