"""Section 4 (04-residuals): wrong answers that must lose their task, right ones that must pass."""

from grader.catalogue import Right, Wrong

# ---------------------------------------------------------------------------------------------
# FeedForward
# ---------------------------------------------------------------------------------------------

_FFN = '''
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.up = nn.Linear({up})
        self.down = nn.Linear({down})

    def forward(self, h):
        return {body}
'''


def _ffn(body, up="d_model, d_ff", down="d_ff, d_model"):
    return _FFN.format(up=up, down=down, body=body)


WRONG = [
    Wrong("FeedForward", "the first layer's output detached: it cannot train",
          _ffn("self.down(torch.relu(self.up(h).detach()))"), expect=("up.weight", "no gradient", "detached")),
    Wrong("FeedForward", "missing ReLU", _ffn("self.down(self.up(h))"),
          expect=("no ReLU", "one linear map")),
    Wrong("FeedForward", "ReLU after the second Linear too",
          _ffn("torch.relu(self.down(torch.relu(self.up(h))))"),
          expect=("after the second Linear",)),
    Wrong("FeedForward", "GELU instead of ReLU",
          _ffn("self.down(nn.functional.gelu(self.up(h)))"),
          expect=("GELU", "ReLU")),
    Wrong("FeedForward", "sigmoid instead of ReLU",
          _ffn("self.down(torch.sigmoid(self.up(h)))"),
          expect=("sigmoid", "ReLU")),
    Wrong("FeedForward", "hidden size d_model instead of d_ff",
          _ffn("self.down(torch.relu(self.up(h)))", up="d_model, d_model", down="d_model, d_model"),
          expect=("parameters", "d_ff", "hidden layer of d_model")),
    Wrong("FeedForward", "no biases", '''
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, h):
        return self.down(torch.relu(self.up(h)))
''', expect=("parameters", "without biases")),
    Wrong("FeedForward", "mixes tokens: adds the mean over the tokens",
          _ffn("self.down(torch.relu(self.up(h + h.mean(dim=1, keepdim=True))))"),
          expect=("alone", "mix the tokens")),
    Wrong("FeedForward", "mixes tokens: softmax over the sequence instead of ReLU",
          _ffn("self.down(torch.softmax(self.up(h), dim=1))"),
          expect=("alone", "softmax over the sequence")),
    Wrong("FeedForward", "mixes tokens: a Linear across the tokens", '''
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    def forward(self, h):
        s = h.shape[1]
        mix = torch.ones(s, s) / s                 # every token averaged with its neighbours
        return self.down(torch.relu(self.up(mix @ h)))
''', expect=("alone", "mix the tokens")),
    Wrong("FeedForward", "adds its input back inside the layer", '''
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    def forward(self, h):
        hidden = torch.relu(self.up(h))
        return self.down(hidden) + h
''', expect=("adds its input", "in the block")),
    Wrong("FeedForward", "a stub that returns its input", '''
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    def forward(self, h):
        return h
''', expect=("returns its input h unchanged",)),
]

RIGHT = [
    Right("FeedForward", "an nn.Sequential attribute", '''
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff),  # widen,
                                 nn.ReLU(), nn.Linear(d_ff, d_model))  # bend, narrow back

    def forward(self, h):
        return self.net(h)
'''),
    Right("FeedForward", "F.relu, layers created in the opposite order", '''
import torch.nn.functional as F

class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear2 = nn.Linear(d_ff, d_model)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = nn.ReLU()

    def forward(self, x):
        x = self.linear1(x)
        x = F.relu(x)
        return self.linear2(x)
'''),
    Right("FeedForward", "subclass of nn.Sequential, clamp(min=0) as the ReLU", '''
class Clamp(nn.Module):
    def forward(self, x):
        return x.clamp(min=0)

class FeedForward(nn.Sequential):
    def __init__(self, d_model, d_ff):
        super().__init__(nn.Linear(d_model, d_ff), Clamp(), nn.Linear(d_ff, d_model))
'''),
]

# ---------------------------------------------------------------------------------------------
# first_layer_gradient
# ---------------------------------------------------------------------------------------------

_GRADIENT = '''
def first_layer_gradient(residual, depth=20):
    {seed}
    stack = [nn.Sequential(nn.Linear(64, 64), nn.Sigmoid()) for _ in range({depth})]  # seeded
    h = torch.randn(32, 64)
    for layer in stack:
        {step}
    h.pow(2).mean().backward()
    return {result}
'''


def _gradient(seed="torch.manual_seed(0)", depth="depth",
              step="h = h + layer(h) if residual else layer(h)",
              result="stack[0][0].weight.grad.norm().item()"):
    return _GRADIENT.format(seed=seed, depth=depth, step=step, result=result)


WRONG += [
    Wrong("first_layer_gradient", "returns the last layer's gradient",
          _gradient(result="stack[-1][0].weight.grad.norm().item()"),
          expect=("LAST layer", "first layer")),
    Wrong("first_layer_gradient", "ignores the residual flag",
          _gradient(step="h = h + layer(h)"),
          expect=("ignores the `residual` flag",)),
    Wrong("first_layer_gradient", "the flag the wrong way round",
          _gradient(step="h = layer(h) if residual else h + layer(h)"),
          expect=("wrong way round",)),
    Wrong("first_layer_gradient", "no seed", _gradient(seed="pass"),
          expect=("torch.manual_seed(0)", "two calls")),
    Wrong("first_layer_gradient", "another seed", _gradient(seed="torch.manual_seed(42)"),
          expect=("the recipe gives",)),
    Wrong("first_layer_gradient", "h = layer(h) + layer(h)",
          _gradient(step="h = layer(h) + layer(h) if residual else layer(h)"),
          expect=("the recipe gives", "h = h + layer(h)")),
    Wrong("first_layer_gradient", "the residual inside the sigmoid",
          _gradient(step="h = layer[1](layer[0](h) + h) if residual else layer(h)"),
          expect=("not inside the sigmoid",)),
    Wrong("first_layer_gradient", "always 20 layers, depth ignored", _gradient(depth="20"),
          expect=("depth=2", "range(depth)")),
    Wrong("first_layer_gradient", "returns a tensor, not a float",
          _gradient(result="stack[0][0].weight.grad.norm()"),
          expect=("tensor", ".item()")),
    Wrong("first_layer_gradient", "the gradient of the bias, not the weight",
          _gradient(result="stack[0][0].bias.grad.norm().item()"),
          expect=("the recipe gives",)),
]

RIGHT += [
    Right("first_layer_gradient", "nn.ModuleList and a plain if", '''
def first_layer_gradient(residual, depth=20):
    torch.manual_seed(0)
    stack = nn.ModuleList()
    for _ in range(depth):
        stack.append(nn.Sequential(nn.Linear(64, 64), nn.Sigmoid()))
    x = torch.randn(32, 64)
    for block in stack:
        if residual:
            x = block(x) + x
        else:
            x = block(x)
    loss = (x ** 2).mean()
    loss.backward()
    return float(torch.linalg.norm(stack[0][0].weight.grad))
'''),
    Right("first_layer_gradient", "torch.autograd.grad, batch drawn before the layers", '''
def first_layer_gradient(residual, depth=20):
    torch.manual_seed(0)
    h = torch.randn(32, 64)
    linears = [nn.Linear(64, 64) for _ in range(depth)]
    for linear in linears:
        change = torch.sigmoid(linear(h))
        h = h + change if residual else change
    (grad,) = torch.autograd.grad(h.pow(2).mean(), linears[0].weight)
    return grad.norm().item()
'''),
    Right("first_layer_gradient", "one nn.Sequential of the layers, reseeded before the batch", '''
def first_layer_gradient(residual, depth=20):
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.Sigmoid()) for _ in range(depth)])
    torch.manual_seed(0)
    h = torch.randn(32, 64)
    for layer in model:
        h = h + layer(h) if residual else layer(h)
    h.pow(2).mean().backward()
    return model[0][0].weight.grad.norm().item()
'''),
]

# ---------------------------------------------------------------------------------------------
# DeepStack
# ---------------------------------------------------------------------------------------------

_STACK = '''
class DeepStack(nn.Module):
    def __init__(self, d_model, depth, residual):
        super().__init__()
        self.residual = residual
        self.blocks = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(depth))

    def forward(self, h):
{body}
'''


def _stack(body):
    return _STACK.format(body=body.strip("\n"))


WRONG += [
    Wrong("DeepStack", "ignores the residual flag", _stack('''
        for linear in self.blocks:
            h = linear(attention(h, h, h)[0])
        return h
'''), expect=("ignores the `residual` flag",)),
    Wrong("DeepStack", "always adds the shortcut", _stack('''
        for linear in self.blocks:
            h = h + linear(attention(h, h, h)[0])
        return h
'''), expect=("ignores the `residual` flag",)),
    Wrong("DeepStack", "the shortcut added only once, at the end", _stack('''
        x = h
        for linear in self.blocks:
            x = linear(attention(x, x, x)[0])
        return h + x if self.residual else x
'''), expect=("only once", "inside the loop")),
    Wrong("DeepStack", "no token mixing: Linear blocks only", _stack('''
        for linear in self.blocks:
            change = linear(h)
            h = h + change if self.residual else change
        return h
'''), expect=("do not mix the tokens",)),
    Wrong("DeepStack", "a ReLU after each Linear", _stack('''
        for linear in self.blocks:
            change = torch.relu(linear(attention(h, h, h)[0]))
            h = h + change if self.residual else change
        return h
'''), expect=("ReLU after each Linear",)),
    Wrong("DeepStack", "the Linear before the attention", _stack('''
        for linear in self.blocks:
            x = linear(h)
            change = attention(x, x, x)[0]
            h = h + change if self.residual else change
        return h
'''), expect=("before the attention",)),
    Wrong("DeepStack", "one Linear shared by every block", '''
class DeepStack(nn.Module):
    def __init__(self, d_model, depth, residual):
        super().__init__()
        self.residual, self.depth = residual, depth
        self.linear = nn.Linear(d_model, d_model)

    def forward(self, h):
        for _ in range(self.depth):
            change = self.linear(attention(h, h, h)[0])
            h = h + change if self.residual else change
        return h
''', expect=("parameters", "one Linear")),
    Wrong("DeepStack", "a LayerNorm added to each block", '''
class DeepStack(nn.Module):
    def __init__(self, d_model, depth, residual):
        super().__init__()
        self.residual = residual
        self.blocks = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(depth))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(depth))

    def forward(self, h):
        for linear, norm in zip(self.blocks, self.norms):
            x = norm(h)
            change = linear(attention(x, x, x)[0])
            h = h + change if self.residual else change
        return h
''', expect=("parameters", "no parameters")),
    Wrong("DeepStack", "the Linear layers in a plain list", '''
class DeepStack(nn.Module):
    def __init__(self, d_model, depth, residual):
        super().__init__()
        self.residual = residual
        self.blocks = [nn.Linear(d_model, d_model) for _ in range(depth)]

    def forward(self, h):
        for linear in self.blocks:
            change = linear(attention(h, h, h)[0])
            h = h + change if self.residual else change
        return h
''', expect=("has 0 parameters", "plain python list", "nn.ModuleList")),
    Wrong("DeepStack", "the shortcut added in place (h += change): the caller's tensor changes", _stack('''
        for linear in self.blocks:
            change = linear(attention(h, h, h)[0])
            if self.residual:
                h += change
            else:
                h = change
        return h
'''), ("changed the tensor it was given in place",)),
]

RIGHT += [
    Right("DeepStack", "nn.Sequential of blocks holding their Linear", '''
class MixThenLinear(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        out, _ = attention(x, x, x)
        return self.proj(out)

class DeepStack(nn.Module):
    def __init__(self, d_model, depth, residual):
        super().__init__()
        self.use_shortcut = residual
        self.layers = nn.Sequential(*[MixThenLinear(d_model) for _ in range(depth)])

    def forward(self, x):
        for block in self.layers:
            x = x + block(x) if self.use_shortcut else block(x)
        return x
'''),
    Right("DeepStack", "F.scaled_dot_product_attention and an explicit if", '''
import torch.nn.functional as F

class DeepStack(nn.Module):
    def __init__(self, d_model, depth, residual):
        super().__init__()
        self.residual = residual
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(depth)])

    def forward(self, h):
        for lin in self.linears:
            update = lin(F.scaled_dot_product_attention(h, h, h))
            if self.residual:
                h = h + update
            else:
                h = update
        return h
'''),
    Right("DeepStack", "softmax written out, setattr layers", '''
import math

class DeepStack(nn.Module):
    def __init__(self, d_model, depth, residual):
        super().__init__()
        self.residual, self.depth = residual, depth
        for i in range(depth):
            setattr(self, f"block{i}", nn.Linear(d_model, d_model))

    def forward(self, h):
        for i in range(self.depth):
            weights = torch.softmax(h @ h.transpose(-2, -1) / math.sqrt(h.shape[-1]), dim=-1)
            change = getattr(self, f"block{i}")(weights @ h)
            h = h + change if self.residual else change
        return h
'''),
]

# ---------------------------------------------------------------------------------------------
# ReZeroStack
# ---------------------------------------------------------------------------------------------

_REZERO = '''
class ReZeroStack(nn.Module):
    def __init__(self, d_model, depth):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(depth))
        self.alpha = {alpha}

    def forward(self, h):
        for i, linear in enumerate(self.blocks):
            {step}
        return h
'''


def _rezero(alpha="nn.Parameter(torch.zeros(depth))",
            step="h = h + self.alpha[i] * linear(attention(h, h, h)[0])"):
    return _REZERO.format(alpha=alpha, step=step)


WRONG += [
    Wrong("ReZeroStack", "the alphas a plain tensor, not an nn.Parameter",
          _rezero(alpha="torch.zeros(depth)"),
          expect=("parameters", "not parameters", "nn.Parameter")),
    Wrong("ReZeroStack", "the alphas a Python list of parameters",
          _rezero(alpha="[nn.Parameter(torch.zeros(())) for _ in range(depth)]"),
          expect=("not parameters", "python list", "nn.ParameterList")),
    Wrong("ReZeroStack", "each alpha read as a Python number: it cannot train",
          _rezero(step="h = h + self.alpha[i].item() * linear(attention(h, h, h)[0])"),
          expect=("alpha", "no gradient", "python number")),
    Wrong("ReZeroStack", "the alphas frozen (requires_grad=False)",
          _rezero(alpha="nn.Parameter(torch.zeros(depth), requires_grad=False)"),
          expect=("alpha", "no gradient", "frozen")),
    Wrong("ReZeroStack", "one alpha shared by every block",
          _rezero(alpha="nn.Parameter(torch.zeros(()))", step="h = h + self.alpha * linear(attention(h, h, h)[0])"),
          expect=("one alpha shared", "alpha[i]")),
    Wrong("ReZeroStack", "the blocks in a plain Python list", '''
class ReZeroStack(nn.Module):
    def __init__(self, d_model, depth):
        super().__init__()
        self.blocks = [nn.Linear(d_model, d_model) for _ in range(depth)]
        self.alpha = nn.Parameter(torch.zeros(depth))

    def forward(self, h):
        for alpha, linear in zip(self.alpha, self.blocks):
            h = h + alpha * linear(attention(h, h, h)[0])
        return h
''', expect=("has 12 parameters", "plain python list", "nn.ModuleList")),
    Wrong("ReZeroStack", "the alphas start at 1", _rezero(alpha="nn.Parameter(torch.ones(depth))"),
          expect=("start at", "expected zeros", "plain residual stack")),
    Wrong("ReZeroStack", "the alphas start random", _rezero(alpha="nn.Parameter(torch.randn(depth))"),
          expect=("start at", "expected zeros")),
    Wrong("ReZeroStack", "replaces h by the scaled change (no shortcut)",
          _rezero(step="h = self.alpha[i] * linear(attention(h, h, h)[0])"),
          expect=("returns zeros", "h + alpha[i]")),
    Wrong("ReZeroStack", "the change added without its alpha",
          _rezero(step="h = h + linear(attention(h, h, h)[0])"),
          expect=("without alpha",)),
    Wrong("ReZeroStack", "alpha scales the Linear's input: the bias escapes",
          _rezero(step="h = h + linear(self.alpha[i] * attention(h, h, h)[0])"),
          expect=("bias escapes alpha",)),
    Wrong("ReZeroStack", "alpha scales the Linear's weight only: the bias escapes",
          _rezero(step="h = h + nn.functional.linear(attention(h, h, h)[0], self.alpha[i] * linear.weight, "
                       "linear.bias)"),
          expect=("bias escapes alpha",)),
    Wrong("ReZeroStack", "alpha[0] for every block",
          _rezero(step="h = h + self.alpha[0] * linear(attention(h, h, h)[0])"),
          expect=("alpha[0]", "its own alpha[i]")),
    Wrong("ReZeroStack", "the alphas paired with the blocks in reverse",
          _rezero(step="h = h + self.alpha[-1 - i] * linear(attention(h, h, h)[0])"),
          expect=("reverse order",)),
    Wrong("ReZeroStack", "a weighted average of h and the change",
          _rezero(step="h = (1 - self.alpha[i]) * h + self.alpha[i] * linear(attention(h, h, h)[0])"),
          expect=("weighted average", "keeps all of h")),
    Wrong("ReZeroStack", "no token mixing: Linear blocks only",
          _rezero(step="h = h + self.alpha[i] * linear(h)"),
          expect=("do not mix the tokens",)),
]

RIGHT += [
    Right("ReZeroStack", "an nn.ParameterList of scalars, blocks as modules of their own", '''
class Mix(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(attention(x, x, x)[0])

class ReZeroStack(nn.Module):
    def __init__(self, d_model, depth):
        super().__init__()
        self.layers = nn.ModuleList([Mix(d_model) for _ in range(depth)])
        self.scales = nn.ParameterList([nn.Parameter(torch.tensor(0.0)) for _ in range(depth)])

    def forward(self, x):
        for layer, scale in zip(self.layers, self.scales):
            x = x + scale * layer(x)
        return x
'''),
    Right("ReZeroStack", "one vector of zeros, F.scaled_dot_product_attention, an index loop", '''
import torch.nn.functional as F

class ReZeroStack(nn.Module):
    def __init__(self, d_model, depth):
        super().__init__()
        self.depth = depth
        self.linears = nn.Sequential(*[nn.Linear(d_model, d_model) for _ in range(depth)])
        self.resweight = nn.Parameter(torch.zeros(depth, 1, 1))

    def forward(self, h):
        for i in range(self.depth):
            update = self.linears[i](F.scaled_dot_product_attention(h, h, h))
            h = update * self.resweight[i] + h
        return h
'''),
    Right("ReZeroStack", "each block holds its own alpha, softmax written out", '''
import math

class GatedBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear = nn.Linear(d, d)
        self.gate = nn.Parameter(torch.zeros(1))

    def forward(self, h):
        weights = torch.softmax(h @ h.transpose(-2, -1) / math.sqrt(h.shape[-1]), dim=-1)
        return h + self.gate * self.linear(weights @ h)

class ReZeroStack(nn.Module):
    def __init__(self, d_model, depth):
        super().__init__()
        self.blocks = nn.ModuleList(GatedBlock(d_model) for _ in range(depth))

    def forward(self, h):
        for block in self.blocks:
            h = block(h)
        return h
'''),
]
