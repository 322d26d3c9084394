"""Checks of section 4: the feed-forward layer and residual connections.

- check_feed_forward: FeedForward(d_model, d_ff) is Linear(d_model, d_ff) -> ReLU -> Linear(d_ff,
  d_model), with 2 * d_model * d_ff + d_ff + d_model parameters, and sends every token through
  alone.
- check_first_layer_gradient: first_layer_gradient(residual, depth) follows the seeded recipe; the
  first layer's gradient vanishes without residual connections and not with them.
- check_deep_stack: DeepStack(d_model, depth, residual) is `depth` blocks of token mixing
  (attention with the token vectors as queries, keys and values) followed by a Linear, with or
  without the shortcut; without it a deep stack turns a query's tokens into one vector.
- check_rezero_stack: ReZeroStack(d_model, depth) is the same blocks, always with the shortcut, each
  change scaled by its own trained alpha that starts at 0: the stack starts as the identity.

Each check puts fixed weights, drawn from the check's seed, in the student's Linear layers, and
compares the outputs with what grader.references gives for the check's settings: the right result
and those of the usual mistakes, whose message it gives when one matches. Then it runs the layer on
tokens drawn as it runs, with some weights at zero so that the output is known from the biases alone
(`_hidden_fixed`, `expect_biases_pass_through`): in the student edition no recorded result answers
them. first_layer_gradient has no input to draw: its right result is its recipe's, recorded.
"""

import functools

import torch
from torch import nn

from grader import references
from grader.checks import (TOLERANCE, call, close, diagnose, expect, expect_close, expect_learns, expect_shape,
                           fresh_generator, load_fixed_linears, passed, silenced, task)


def _one_thread(check):
    """Run a check on one thread: its many small matrix products are fastest that way, and do not
    slow to a crawl when several notebooks are graded at once on a few cores."""
    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return check(*args, **kwargs)
        finally:
            torch.set_num_threads(threads)
    return wrapper


def seeded_tokens(batch, length, d, seed):
    """Token vectors drawn with a private generator, so the student's seeds do not matter."""
    return torch.randn(batch, length, d, generator=torch.Generator().manual_seed(seed))


def fresh_tokens(d):
    """Token vectors of a batch and length drawn as the check runs (fresh_generator): no recorded
    result (the student edition's grader/references) answers them."""
    generator = fresh_generator()
    batch, length = (int(n) for n in torch.randint(2, 9, (2,), generator=generator))
    return torch.randn(batch, length, d, generator=generator)


def expect_biases_pass_through(module, linears, what, residual=True, alphas=None):
    """The stack on fresh_tokens with every Linear's weight at zero and a new bias: each block's
    change is then its bias alone, whatever attention makes of h, so the stack returns h plus the
    biases (each times its alpha, for ReZero), or without shortcuts the last bias at every token.
    No recorded result answers new tokens."""
    h = fresh_tokens(linears[0].in_features)
    generator = fresh_generator()
    biases = [torch.randn(linear.bias.shape, generator=generator) for linear in linears]
    with silenced(linears, biases):
        out = _forward(module, h)
    scales = [1.0] * len(biases) if alphas is None else alphas.tolist()
    want = h + sum(a * b for a, b in zip(scales, biases)) if residual else biases[-1].expand_as(h)
    expect_close(out, want, f"{what} on new tokens, of shape {tuple(h.shape)}, with its Linear layers' "
                 "weights at zero,", hint="Then each block changes h by its Linear's bias alone"
                 + (" times its alpha" if alphas is not None else "") + ", whatever attention does. It is "
                 "right on the check's own tokens: does it depend on more than h and its weights?")


def _hidden_fixed(ffn, first, second, what):
    """The layer on fresh_tokens with its first Linear's weight at zero and a new bias: every
    token's hidden numbers are then that bias through the ReLU, and every output the second Linear
    of those. No recorded result answers new tokens."""
    h = fresh_tokens(first.in_features)
    bias = torch.randn(first.bias.shape, generator=fresh_generator())
    with silenced([first], [bias]):
        out = _forward(ffn, h)
    with torch.no_grad():
        want = second(torch.relu(bias)).expand(*h.shape[:-1], second.out_features)
    expect_close(out, want, f"{what} on new tokens, of shape {tuple(h.shape)}, with its first Linear's weight "
                 "at zero,", hint="Then every token's hidden numbers are that Linear's bias through the ReLU. It "
                 "is right on the check's own tokens: does it depend on more than h and its weights?")


def feed_forward_linears(module):
    """The module's nn.Linear layers in the order they were registered."""
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def load_fixed_weights(linears, seed):
    """Give the Linear layers weights drawn from a private generator, the way nn.Linear draws its
    own (uniform within 1/sqrt(in_features)). The outputs then depend on the check's settings
    alone, whatever order the student's code made its layers in, and grader.references can hold
    them."""
    load_fixed_linears(linears, torch.Generator().manual_seed(10_000 + seed))


def rezero_alphas(depth):
    """Distinct alphas of both signs, one per block, for the ReZero check."""
    return torch.tensor([(0.3 + 0.6 * i / depth) * (-1) ** i for i in range(depth)])


def _build(cls, *args, what):
    module = call(cls, *args)
    expect(isinstance(module, nn.Module),
           f"{what} should build an nn.Module (class ...(nn.Module) with super().__init__()), "
           f"got {type(module).__name__}")
    return module


def _forward(module, h):
    """The module's output on h; h itself must come back as it was given: in a stack, the caller's
    tensor is the stream that a shortcut adds to."""
    kept = h.clone()
    with torch.no_grad():
        out = call(module.forward, h)
    expect(torch.equal(h, kept), f"{type(module).__name__}'s forward changed the tensor it was given in "
           "place (h += ..., h.add_(...)): its caller still needs it as it was. Build the new h as a new "
           "tensor (h = h + ...).")
    return out


@task
def spread(h):
    """How far a query's token vectors sit from their own mean, over their mean length.

    h: (..., s, d) -> (...,). 0 means one vector repeated s times.
    """
    gap = (h - h.mean(dim=-2, keepdim=True)).norm(dim=-1).mean(dim=-1)
    return gap / h.norm(dim=-1).mean(dim=-1)


# ---------------------------------------------------------------------------------------------
# FeedForward
# ---------------------------------------------------------------------------------------------

@_one_thread
@task
def check_feed_forward(FeedForward, d_model=64, d_ff=256, seed=0):
    what = f"FeedForward({d_model}, {d_ff})"
    torch.manual_seed(seed)
    ffn = _build(FeedForward, d_model, d_ff, what=what)

    h = seeded_tokens(3, 7, d_model, seed)
    out = _forward(ffn, h)
    expect_shape(out, (3, 7, d_model), f"{what} applied to h of shape (3, 7, {d_model})")
    _token_by_token(ffn, h, out, what, d_model, seed)
    _two_layers_counted(ffn, what, d_model, d_ff)
    first, second = _feed_forward_pair(ffn, what, d_model, d_ff)
    load_fixed_weights([first, second], seed)
    _computes_linear_relu_linear(_forward(ffn, h), what, d_model, d_ff, seed)
    _hidden_fixed(ffn, first, second, what)
    expect_learns(ffn, h, what=what)
    passed()


def _token_by_token(ffn, h, out, what, d_model, seed):
    """Each token goes through alone: alone as in the batch, whatever its neighbours."""
    t = 4
    mixing = ("Each token must go through the layer alone: does your forward mix the tokens "
              "(a mean or sum over dim 1, a softmax over the sequence, a Linear across the tokens)?")
    alone = _forward(ffn, h[:, t:t + 1])
    expect_shape(alone, (3, 1, d_model), f"{what} applied to token {t} alone, shape (3, 1, {d_model})")
    expect_close(alone[:, 0], out[:, t], f"Token {t} sent alone", hint=mixing)
    neighbours = seeded_tokens(3, 7, d_model, seed + 1)
    neighbours[:, t] = h[:, t]
    expect_close(_forward(ffn, neighbours)[:, t], out[:, t],
                 f"Token {t}'s output after changing only the other tokens", hint=mixing)


def _two_layers_counted(ffn, what, d_model, d_ff):
    """Parameters: two weights and two biases."""
    expected = 2 * d_model * d_ff + d_ff + d_model
    n = sum(p.numel() for p in ffn.parameters())
    if n != expected:
        if n == 2 * d_model * d_model + 2 * d_model:
            hint = (f"That is the count of a hidden layer of d_model={d_model} numbers: the first "
                    f"Linear goes to d_ff={d_ff} numbers, Linear(d_model, d_ff), and the second back, "
                    "Linear(d_ff, d_model).")
        elif n == 2 * d_model * d_ff:
            hint = "That is the count without biases: keep nn.Linear's default bias=True."
        elif n == d_model * d_ff + d_ff or n == d_model * d_ff + d_model:
            hint = "That is one Linear layer: the layer has two, d_model -> d_ff and d_ff -> d_model."
        else:
            hint = "Build exactly two layers, nn.Linear(d_model, d_ff) and nn.Linear(d_ff, d_model)."
        raise AssertionError(f"{what} has {n:,} parameters, expected {expected:,} = 2 x {d_model} x "
                             f"{d_ff} weights + {d_ff} + {d_model} biases. {hint}")


def _feed_forward_pair(ffn, what, d_model, d_ff):
    """The student's own Linear(d_model, d_ff) and Linear(d_ff, d_model), found by their shapes."""
    linears = feed_forward_linears(ffn)
    first = [m for m in linears if (m.in_features, m.out_features) == (d_model, d_ff)]
    second = [m for m in linears if (m.in_features, m.out_features) == (d_ff, d_model)]
    expect(first and second,
           f"{what} should hold an nn.Linear({d_model}, {d_ff}) and an nn.Linear({d_ff}, {d_model}); "
           f"found {[(m.in_features, m.out_features) for m in linears]} (in_features, out_features).")
    return first[0], second[0]


def _computes_linear_relu_linear(out, what, d_model, d_ff, seed):
    """With the check's weights in the two layers: Linear -> ReLU -> Linear (a known mistake named)."""
    results = references.expected("residuals", "feed_forward", d_model, d_ff, seed)
    reference = results["right"]
    guesses = [
            (results["no relu"], "there is no ReLU between the two Linear layers. Without it the two "
                             "are one linear map (their weights multiply into a single matrix)."),
            (results["gelu"], "it applies GELU between the Linear layers; this layer uses "
                                     "ReLU (torch.relu or nn.ReLU())."),
            (results["relu after"],
             "it applies a ReLU after the second Linear too, so no output can be negative. The ReLU "
             "goes only between the two Linear layers."),
            (results["sigmoid"], "it applies a sigmoid between the Linear layers; use ReLU."),
            (results["tanh"], "it applies tanh between the Linear layers; use ReLU."),
            (results["input"], "it returns its input h unchanged: the two Linear layers and the ReLU between them "
                "never touch it. Compute self.<second>(relu(self.<first>(h))) and return that."),
            (results["residual inside"], "it adds its input h to the output. The residual connection goes "
                            "around the layer, in the block (h + ffn(h)); FeedForward itself returns "
                            "only Linear -> ReLU -> Linear."),
        ]
    if not diagnose(out, reference, guesses, what, mistake_tolerance="float32"):
        expect_close(out, reference, f"{what}'s output",
                     hint=f"Expected Linear({d_model}, {d_ff}) -> ReLU -> Linear({d_ff}, {d_model}), "
                          "with the check's weights put in your two Linear layers.")


# ---------------------------------------------------------------------------------------------
# first_layer_gradient
# ---------------------------------------------------------------------------------------------

def _gradient(function, residual, depth):
    value = call(function, residual, depth=depth) if depth is not None else call(function, residual)
    shown = f"first_layer_gradient({residual}" + (f", depth={depth})" if depth is not None else ")")
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        raise AssertionError(f"{shown} returned a tensor; return a Python float: end with .item().")
    expect(isinstance(value, float) and not isinstance(value, bool),
           f"{shown} should return a float (the norm of a gradient, .item()), got {type(value).__name__}")
    return value


@_one_thread
@task
def check_first_layer_gradient(first_layer_gradient, depth=None):
    """depth=None calls the function with its default depth, which must be 20."""
    d = 20 if depth is None else depth
    recipe = {residual: references.expected("residuals", "first_layer_gradients", residual, d)
              for residual in (False, True)}
    shallow_recipe = references.expected("residuals", "first_layer_gradients", False, 2)
    plain = _gradient(first_layer_gradient, False, depth)
    again = _gradient(first_layer_gradient, False, depth)
    expect(again == plain,
           f"Two calls of first_layer_gradient(False, depth={d}) returned {plain:.4e} and {again:.4e}. "
           "Call torch.manual_seed(0) at the start of the function, before building the layers, so "
           "that every call builds the same layers and draws the same batch.")
    shortcut = _gradient(first_layer_gradient, True, depth)
    expect(not close(plain, shortcut, "relative"),
           f"first_layer_gradient gives {plain:.4e} with residual=False and with residual=True: it "
           "ignores the `residual` flag. With it, h = h + layer(h); without it, h = layer(h).")

    for residual, value in ((False, plain), (True, shortcut)):
        _follows_the_recipe(value, residual, recipe, d)

    # What the experiment shows, stated as the check's own claims.
    if d >= 12:
        expect(plain < 1e-6, f"Without residual connections the first layer's gradient should vanish "
                             f"at depth {d} (below 1e-6), got {plain:.2e}.")
        expect(shortcut > 1e-2, f"With residual connections the first layer's gradient should stay "
                                f"clearly non-zero at depth {d} (above 1e-2), got {shortcut:.2e}.")
        expect(shortcut > 1e8 * plain, f"The shortcut should change the first layer's gradient by many "
                                       f"orders of magnitude; got {plain:.2e} and {shortcut:.2e}.")
    shallow = _gradient(first_layer_gradient, False, 2)
    expect(shallow > 1e-4 and _matches_recipe(shallow, shallow_recipe),
           f"first_layer_gradient(False, depth=2) returned {shallow:.2e}, but two sigmoid layers leave "
           f"the first a gradient of {shallow_recipe['layers 0']:.2e}: does your function build `depth` layers "
           "(range(depth)) rather than a fixed number?")
    passed()


def _matches_recipe(value, gradients, which=0):
    """Whether `value` is the recipe's gradient of layer `which` (0: the first, -1: the last),
    whichever of the recipe's orders of drawing made it."""
    return any(close(value, gradients[f"{order} {which}"], "relative") for order in ("layers", "batch", "reseed"))


def _follows_the_recipe(value, residual, recipe, d):
    """The gradient the recipe gives with this `residual` flag; else the likely mistake, named."""
    if _matches_recipe(value, recipe[residual]):
        return
    expected = recipe[residual]["layers 0"]
    if _matches_recipe(value, recipe[residual], which=-1):
        raise AssertionError(
            f"first_layer_gradient({residual}, depth={d}) returned {value:.4e}, the gradient of the "
            f"LAST layer's weight; the task asks for the first layer's (layers[0]), {expected:.4e}.")
    if _matches_recipe(value, recipe[not residual]):
        raise AssertionError(
            f"first_layer_gradient({residual}, depth={d}) returned {value:.4e}, the value of the "
            f"recipe with residual={not residual}: the flag is the wrong way round. residual=True "
            "means h = h + layer(h).")
    hint = ""
    if residual and value < 1e-6:
        hint = (" With residual=True the gradient vanishes as if there were no shortcut: add the "
                "layer's output to h, h = h + layer(h), outside the layer (not inside the sigmoid).")
    elif not residual and value > 1e-6 and d >= 12:
        hint = (" Without residual connections the first layer's gradient should all but vanish: "
                "replace h by layer(h) at every step.")
    raise AssertionError(
        f"first_layer_gradient({residual}, depth={d}) returned {value:.4e}; the recipe gives "
        f"{expected:.4e}.{hint} The recipe: torch.manual_seed(0) first; then {d} layers made in "
        "order, each an nn.Linear(64, 64) followed by a sigmoid; then h = torch.randn(32, 64); "
        "through each layer, h = h + layer(h) if residual else layer(h); backward() of the mean "
        "of h squared; return the norm of the first layer's weight gradient as a float.")


# ---------------------------------------------------------------------------------------------
# DeepStack
# ---------------------------------------------------------------------------------------------

def _stack_outputs(DeepStack, d_model, depth, seed):
    """Build the stack with and without the shortcut, check the parameters, put the check's fixed
    weights in its Linear layers (in the order they were registered) and compare each output with
    the stack's, then with the usual mistakes'."""
    modules = {residual: _deep_stack_built(DeepStack, d_model, depth, residual, seed) for residual in (False, True)}
    h = seeded_tokens(2, 10, d_model, seed)
    outputs = {}
    for residual, module in modules.items():
        what = f"DeepStack({d_model}, {depth}, residual={residual})"
        out = _forward(module, h)
        expect_shape(out, h.shape, f"{what} applied to h of shape {tuple(h.shape)}")
        outputs[residual] = out
        results = references.expected("residuals", "deep_stack", d_model, depth, seed, residual)
        exact, tolerance = results["right"], {**TOLERANCE["float32"], "atol": results["atol"]}
        guesses = [
            (results["flag ignored"],
             "it computes the same as with residual=" + str(not residual) + ": it ignores the "
             "`residual` flag. With the flag, h = h + block(h) in every block; without it, "
             "h = block(h)."),
            (results["added once"],
             "it adds the input only once, after the last block. The shortcut goes around every "
             "block: h = h + block(h) inside the loop."),
            (results["no mixing"],
             "its blocks do not mix the tokens: each block is Linear(attention(h, h, h)), with the "
             "token vectors as queries, keys and values (ticketnet.attention), then the Linear."),
            (results["relu"],
             "it applies a ReLU after each Linear; the block here is attention then Linear, "
             "no ReLU."),
            (results["linear first"],
             "it applies the Linear before the attention; the block mixes the tokens first, "
             "then applies the Linear: linear(attention(h, h, h)[0])."),
        ]
        if diagnose(out.double(), exact, guesses, what, tolerance=tolerance):
            continue
        expect_close(out.double(), exact, f"{what}'s output", tolerance=tolerance,
                     hint="Expected, for each of your Linear layers in order (holding the check's "
                          "weights): the tokens mixed by attention with h as queries, keys and values, "
                          "then that Linear; the result added to h with residual=True, in place of h "
                          "without it.")
    for residual, module in modules.items():
        what = f"DeepStack({d_model}, {depth}, residual={residual})"
        expect_biases_pass_through(module, feed_forward_linears(module), what, residual=residual)
        expect_learns(module, h, what=what)
    return outputs


def _deep_stack_built(DeepStack, d_model, depth, residual, seed):
    """DeepStack(d_model, depth, residual) with its parameters counted and the check's fixed
    weights in its Linear layers, in the order they were registered."""
    what = f"DeepStack({d_model}, {depth}, residual={residual})"
    module = _build(DeepStack, d_model, depth, residual, what=what)
    n = sum(p.numel() for p in module.parameters())
    expected = depth * (d_model * d_model + d_model)
    expect(n == expected,
           f"{what} has {n:,} parameters, expected {expected:,} = {depth} blocks x one "
           f"Linear({d_model}, {d_model}) ({d_model * d_model:,} weights + {d_model} biases). "
           "The token mixing (attention with h as queries, keys and values) has no parameters."
           + (" None of its layers is registered: nn.Module sees the modules assigned to its "
              "attributes, not those inside a plain Python list or dict. Hold the blocks in "
              "nn.ModuleList([...]) (or nn.Sequential)." if n == 0 else ""))
    linears = feed_forward_linears(module)
    expect(len(linears) == depth and all(
               (m.in_features, m.out_features) == (d_model, d_model) for m in linears),
           f"{what} should hold {depth} nn.Linear({d_model}, {d_model}) layers, one per block; found "
           f"{[(m.in_features, m.out_features) for m in linears]}.")
    load_fixed_weights(linears, seed)
    return module


@_one_thread
@task
def check_deep_stack(DeepStack, d_model=64, depth=12, seed=0, collapse=True):
    # A shallow stack first: there the tokens still differ, so every block's computation shows.
    if depth > 2:
        _stack_outputs(DeepStack, d_model, 2, seed)
    outputs = _stack_outputs(DeepStack, d_model, depth, seed)
    expect(not close(outputs[False], outputs[True]),
           "DeepStack gives the same output with residual=True and residual=False: the flag changes nothing.")
    if collapse:
        flat, kept = spread(outputs[False]).max().item(), spread(outputs[True]).min().item()
        expect(flat < 1e-3,
               f"Without shortcuts, {depth} blocks should make every token of a query the same vector "
               f"(spread below 1e-3), got a spread of {flat:.2e}.")
        expect(kept > 0.3,
               f"With shortcuts, {depth} blocks should keep a query's tokens apart (spread above 0.3), "
               f"got {kept:.4f}.")
    passed()


# ---------------------------------------------------------------------------------------------
# ReZeroStack
# ---------------------------------------------------------------------------------------------

def _alphas(module, linears, what, depth):
    """The parameters that are not the Linear layers', in the order they were registered: one
    vector of `depth` numbers, or `depth` scalars (an nn.ParameterList, or one per block)."""
    inside = {id(p) for linear in linears for p in linear.parameters()}
    alphas = [p for p in module.parameters() if id(p) not in inside]
    expect(len(alphas) in (1, depth) and all(p.numel() == depth // len(alphas) for p in alphas),
           f"{what} holds its {depth} alphas as parameters of shapes {[tuple(p.shape) for p in alphas]}; "
           f"hold them as one parameter of {depth} numbers, or as {depth} parameters of one number each "
           "(an nn.ParameterList), one per block.")
    return alphas


def _set_alphas(alphas, values):
    with torch.no_grad():
        start = 0
        for p in alphas:
            p.copy_(values[start:start + p.numel()].view_as(p))
            start += p.numel()


@_one_thread
@task
def check_rezero_stack(ReZeroStack, d_model=64, depth=12, seed=0):
    what = f"ReZeroStack({d_model}, {depth})"
    module = _build(ReZeroStack, d_model, depth, what=what)
    linears, alphas = _rezero_parts(module, what, d_model, depth)
    _starts_switched_off(alphas, what, depth)
    h = _returns_its_input(module, linears, what, d_model, depth, seed)
    values = _scales_each_block(module, alphas, h, what, d_model, depth, seed)
    expect_biases_pass_through(module, linears, what, alphas=values)
    expect_learns(module, h, what=what)
    passed()


def _rezero_parts(module, what, d_model, depth):
    """The stack's Linear layers and alphas, after its parameters are counted: depth
    Linear(d_model, d_model) and one alpha per block."""
    per_block = d_model * d_model + d_model
    expected = depth * per_block + depth
    n = sum(p.numel() for p in module.parameters())
    linears = feed_forward_linears(module)
    if n != expected:
        if not linears:
            hint = ("None of its Linear layers is registered: nn.Module sees the modules assigned to its "
                    "attributes, not those inside a plain Python list or dict. Hold the blocks' layers in "
                    "nn.ModuleList([...]).")
        elif n == depth * per_block:
            hint = ("That is the Linear layers alone: the alphas are not parameters, so no optimizer would "
                    "ever train them. A plain tensor, a buffer or a Python list of tensors is not "
                    "registered: make them nn.Parameter(torch.zeros(depth)), or an nn.ParameterList.")
        elif n == depth * per_block + 1:
            hint = ("That is one alpha shared by every block: each block has its own alpha, "
                    "nn.Parameter(torch.zeros(depth)), and block i is scaled by alpha[i].")
        else:
            hint = (f"Build {depth} nn.Linear({d_model}, {d_model}), one per block, and {depth} alphas; the "
                    "token mixing (attention with h as queries, keys and values) has no parameters.")
        raise AssertionError(f"{what} has {n:,} parameters, expected {expected:,} = {depth} blocks x "
                             f"({d_model * d_model:,} weights + {d_model} biases) + {depth} alphas. {hint}")
    expect(len(linears) == depth and all((m.in_features, m.out_features) == (d_model, d_model) for m in linears),
           f"{what} should hold {depth} nn.Linear({d_model}, {d_model}) layers, one per block; found "
           f"{[(m.in_features, m.out_features) for m in linears]}.")
    return linears, _alphas(module, linears, what, depth)


def _starts_switched_off(alphas, what, depth):
    """At the start every alpha is 0."""
    start = torch.cat([p.detach().reshape(-1) for p in alphas])
    if not torch.equal(start, torch.zeros_like(start)):
        shown = ", ".join(f"{a:.3g}" for a in start[:4].tolist()) + (", ..." if depth > 4 else "")
        raise AssertionError(
            f"{what}'s alphas start at [{shown}], expected zeros: ReZero starts every alpha at 0 "
            "(torch.zeros), so that each block starts switched off and the stack starts as the identity."
            + (" With ones, the stack starts as a plain residual stack." if torch.equal(start, torch.ones_like(start)) else ""))


def _returns_its_input(module, linears, what, d_model, depth, seed):
    """As built (every alpha 0, the check's weights in the Linear layers), the stack returns its
    input; returns that input."""
    load_fixed_weights(linears, seed)
    h = seeded_tokens(2, 10, d_model, seed)
    out = _forward(module, h)
    expect_shape(out, h.shape, f"{what} applied to h of shape {tuple(h.shape)}")
    at_start = references.expected("residuals", "rezero_at_start", d_model, depth, seed)
    guesses = [
        (torch.zeros_like(h),
         "with every alpha at 0 it returns zeros: it replaces h by alpha * block(h). Keep h and "
         "add the scaled change: h + alpha[i] * block_i(h)."),
        (at_start["no alpha"],
         "it adds each block's change at full size, without alpha (h + block(h)): multiply each "
         "block's change by its own alpha."),
        (at_start["bias escapes"],
         "with every alpha at 0 it still adds each Linear's bias: the bias escapes alpha, which "
         "scales what goes into the Linear (or its weight) instead of the block's whole output."),
    ]
    if not diagnose(out, h, guesses, what, tolerance="unchanged", mistake_tolerance="float32"):
        expect_close(out, h, f"{what} as built (every alpha 0)", tolerance="unchanged",
                     hint="With every alpha at 0, each block adds nothing and the stack must return its "
                          "input unchanged.")
    return h


def _scales_each_block(module, alphas, h, what, d_model, depth, seed):
    """With distinct alphas, each block's change is scaled by its own alpha; returns the alphas."""
    values = rezero_alphas(depth)
    _set_alphas(alphas, values)
    out = _forward(module, h)
    expect_shape(out, h.shape, f"{what} applied to h of shape {tuple(h.shape)}")
    results = references.expected("residuals", "rezero", d_model, depth, seed)
    exact, tolerance = results["right"], {**TOLERANCE["float32"], "atol": results["atol"]}
    guesses = [
        (results["no alpha"],
         "it ignores alpha: it adds each block's change at full size, without alpha "
         "(h + block(h)). Multiply each block's change by its own alpha."),
        (results["alpha 0 everywhere"],
         "it scales every block by alpha[0]: block i takes its own alpha[i]."),
        (results["alphas reversed"],
         "it pairs the alphas with the blocks in reverse order: the block nearest the input "
         "takes alpha[0], the next alpha[1], and so on."),
        (results["bias escapes"],
         "the Linear's bias escapes alpha: alpha scales what goes into the Linear (or its "
         "weight) instead of the block's whole output."),
        (results["average"],
         "it takes a weighted average of h and the change, (1 - alpha) h + alpha block(h). "
         "ReZero keeps all of h and adds the scaled change: h + alpha[i] * block_i(h)."),
        (results["no mixing"],
         "its blocks do not mix the tokens: each block is the mixing block of part 3, "
         "attention(h, h, h) with the token vectors as queries, keys and values, then the Linear."),
        (results["linear first"],
         "it applies the Linear before the attention; the block mixes the tokens first, then "
         "applies the Linear."),
    ]
    shown = ", ".join(f"{a:.2f}" for a in values[:3].tolist())
    if not diagnose(out.double(), exact, guesses, what, tolerance=tolerance):
        expect_close(out.double(), exact, f"{what}'s output with its alphas set to [{shown}, ...]", tolerance=tolerance,
                     hint="Expected, for block i in order: h = h + alpha[i] * linear_i(attention(h, h, h)[0]), "
                          "with your Linear layers (holding the check's weights) and alphas.")
    return values
