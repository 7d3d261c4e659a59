"""BERT for pre-training (masked LM, plus next sentence or sentence order prediction), in one file.

Numerically the model is Hugging Face `BertForPreTraining` (post-LN, exact erf GELU, LayerNorm eps 1e-12,
tanh pooler on [CLS], MLM head dense -> GELU -> LayerNorm -> decoder tied to the word embeddings plus
its own bias), so weights convert both ways. The options since BERT, each a BertConfig field whose default
is BERT's (trainer/export.py names the Hugging Face class of each combination, and refuses the others):

- pre_ln: LayerNorm before each sublayer and a final one (Megatron-BERT's layout: `MegatronBertFor*`); with
  embedding_norm, layer 0's attention LayerNorm normalises the embeddings themselves, where the residual
  stream starts, and layer 0's attention reads that stream as it is (ModernBERT's embedding norm and its
  first layer without one: the same function, with the norm's weights under the name every layer has).
- mlp: geglu / swiglu, gated MLPs (Shazeer 2020): fc1 projects to 2 x intermediate, [input | gate] in that
  order, and fc2 takes act(input) * gate, as ModernBERT's `Wi`/`Wo` do.
- bias=False: no bias in any linear layer or LayerNorm (ModernBERT), the decoder's vocab bias excepted.
- position="rotary": rotary position embeddings (Su et al. 2021) on queries and keys instead of a learned
  table, in Hugging Face's layout (dimension i turns with i + D/2), computed in fp32 as ModernBERT does;
  type_vocab_size=0: no segment embeddings. The `modern-*` presets combine them all, as ModernBERT does
  (exported as `ModernBertForMaskedLM`).

What differs from Hugging Face's is *how* it computes, shaped for a GPU:

- Unpadded: a batch is the real tokens of all its sequences, concatenated ([T], padded only at the end up
  to a bucket size so that shapes repeat), as `trainer.data.collate` builds it in the DataLoader workers.
  Every token-wise layer (embeddings, QKV, output projection, MLP, LayerNorms) runs on that [T, H] matrix,
  so padding costs (almost) nothing, and can never change a real token's output.
- No host syncs, one graph: where the sequences lie comes with the batch (`cu_seqlens`, `rows`, `slots`),
  so the model never reads a tensor on the host or makes a shape from data (no `nonzero`, no `.item()`):
  forward and backward compile as one graph (`compile_model`), and a GPU never waits for the CPU.
- Attention over variable-length sequences, chosen in one function, `attention`: on a CUDA device in half
  precision, flash attention over the concatenated sequences (no padding, no mask); elsewhere (the CPU, the
  reference) SDPA on the batch's rows padded to [R, heads, L, head_dim], with a mask that keeps each token
  inside its own sequence. Measured (bench/attention.py, BENCHMARKS.md), FlexAttention lost on the CPU: no
  backward there in torch 2.13, a compiled forward 1.3-2x slower than SDPA's, no attention dropout anywhere.
- Packed rows (objective `none`): a row may hold several pieces `[CLS] text [SEP]` of different documents;
  each piece is a sequence of its own (attention and position ids stay inside it), so a piece computes
  exactly what it would as a row of its own.
- The MLM head projects to the vocab only at the masked positions (gather first): at 15% masking that
  is ~7x less work in the largest matmul of a small model.

The sentence head (pooler + 2-way linear) exists for the objectives with a sentence task: `nsp` and `sop`
(the same head as Hugging Face's `cls.seq_relationship`; the label means NotNext or swapped). With `none`
the model is Hugging Face's `BertForMaskedLM`: no pooler, no sentence head. `BertForPreTraining.padded`
takes Hugging Face's padded [B, L] rows instead (for tests, checks and tools; it reads the mask on the host).

State-dict names (frozen; `trainer/hf_families.py` maps them to Hugging Face's):
  embeddings.{word_embeddings,position_embeddings,token_type_embeddings}.weight, embeddings.norm.{weight,bias}
  layers.N.attn.qkv.{weight,bias}   fused [3H, H]: rows 0:H query, H:2H key, 2H:3H value (HF head order)
  layers.N.attn.out.{weight,bias}   layers.N.attn_norm.{weight,bias}
  layers.N.mlp.fc1.{weight,bias}    layers.N.mlp.fc2.{weight,bias}   layers.N.mlp_norm.{weight,bias}
  final_norm.{weight,bias}          only with pre_ln=True (a pre-LN stack needs a last LayerNorm)
  pooler.{weight,bias}   mlm_head.dense.{weight,bias}   mlm_head.norm.{weight,bias}   mlm_head.bias
  nsp_head.{weight,bias}                 the sentence head (nsp or sop); pooler and it absent with `none`
The MLM decoder weight *is* embeddings.word_embeddings.weight (tied), so it has no entry of its own. Absent
by option: every `.bias` but mlm_head.bias with bias=False; position_embeddings with rotary positions;
token_type_embeddings with type_vocab_size=0; embeddings.norm with pre_ln. Every layer has the same names
(with embedding_norm, layers.0.attn_norm is ModernBERT's embeddings.norm). A gated MLP's fc1 is
[2 x intermediate, H]: rows 0:I the input, I:2I the gate.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from trainer.model_config import BertConfig


def layer_norm(c: BertConfig) -> nn.LayerNorm:
    return nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps, bias=c.bias)


class Embeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.learned_positions, self.segments = config.position == "learned", config.type_vocab_size > 0
        if self.learned_positions:  # rotary positions turn q and k in each attention instead
            self.position_embeddings = nn.Embedding(config.max_position, config.hidden_size)
        if self.segments:  # 0: no segments (ModernBERT); the batch's token types are not read
            self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        # post-LN BERT normalises the embedding sum; pre-LN normalises inside each block instead (with
        # embedding_norm, layer 0's first norm does, and the dropout follows it there)
        self.norm = layer_norm(config) if not config.pre_ln else nn.Identity()
        self.drop = nn.Dropout(config.dropout) if not config.embedding_norm else nn.Identity()

    def forward(
        self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, position_ids: torch.Tensor
    ) -> torch.Tensor:
        # input_ids, token_type_ids, position_ids: [T] -> [T, H]
        x = self.word_embeddings(input_ids)
        if self.segments:
            x = x + self.token_type_embeddings(token_type_ids)
        if self.learned_positions:
            x = x + self.position_embeddings(position_ids)
        return self.drop(self.norm(x))


def rotary(position_ids: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [T, 1, D] of each token's rotation (RoPE): dimensions i and i + D/2 turn together by
    position x theta^(-2i/D). fp32 whatever the autocast, and the same operations as Hugging Face's
    (ModernBertRotaryEmbedding), so that an export computes the same bits."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float, device=position_ids.device)
                                / head_dim))
    freqs = position_ids[:, None].float() * inv_freq  # [T, D/2]
    angles = torch.cat((freqs, freqs), dim=-1)[:, None]  # [T, 1, D]: the same angle for i and i + D/2
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [T, A, D] turned by its token's angles, in fp32, back in x's dtype (bf16 for flash attention)."""
    x32 = x.float()
    first, second = x32.chunk(2, dim=-1)
    return (x32 * cos + torch.cat((-second, first), dim=-1) * sin).to(x.dtype)


class Layout:
    """Where the sequences of a flat batch lie, from the loader's index tensors (`trainer.data.collate`).

    cu_seqlens: int32 [S+1], sequence s is tokens cu_seqlens[s]:cu_seqlens[s+1] (rows or pieces of packed
    rows, then the padding at the end). rows: [R, L], the token at column i of row r (past a row's end, a
    padding token). slots: [T], each token's place r * L + i in `rows`. Built with tensor arithmetic only,
    so no value is read on the host; the shapes come from the inputs' shapes.
    """

    def __init__(self, cu_seqlens: torch.Tensor, rows: torch.Tensor, slots: torch.Tensor):
        self.cu_seqlens, self.rows, self.slots = cu_seqlens, rows, slots
        self.max_len = rows.shape[1]  # no sequence is longer than a row: flash attention's max_seqlen
        tokens = torch.arange(slots.shape[0], device=slots.device, dtype=cu_seqlens.dtype)
        sequence = torch.searchsorted(cu_seqlens, tokens, right=True)  # [T]: the sequence of each token
        in_rows = sequence[rows]  # [R, L]; padding past a row's end is a sequence of its own
        # [R, 1, L, L]: a token sees the tokens of its own sequence (padding sees padding: no empty softmax)
        self.mask = (in_rows[:, :, None] == in_rows[:, None, :])[:, None]


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: Layout, dropout_p: float):
    """softmax(q k^T / sqrt(D)) v within each sequence: q, k, v [T, A, D] -> [T, A, D].

    The one place the kernel is chosen. CUDA in half precision: flash attention over the concatenated
    sequences (cu_seqlens; no padding, no mask, dropout inside the kernel), the GPU path of MosaicBERT and
    ModernBERT. Elsewhere (the CPU: no variable-length kernel there) the reference: gather the rows'
    [R, L] grid, SDPA with the per-sequence mask, and take each token's row back out.
    """
    head_dim = q.shape[-1]
    if q.is_cuda and q.dtype in (torch.float16, torch.bfloat16) and head_dim % 8 == 0 and head_dim <= 256:
        cu, n = layout.cu_seqlens, layout.max_len  # query and key sequences are the same
        out = torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, n, n, dropout_p, False, False)
        return out[0]  # (output, logsumexp, philox seed and offset for the backward's dropout, debug mask)
    grid = [x[layout.rows].transpose(1, 2) for x in (q, k, v)]  # 3 x [R, A, L, D]
    y = F.scaled_dot_product_attention(*grid, attn_mask=layout.mask, dropout_p=dropout_p)  # [R, A, L, D]
    return y.transpose(1, 2).flatten(0, 1)[layout.slots]  # [T, A, D]


Rope = tuple[torch.Tensor, torch.Tensor] | None  # rotary's (cos, sin) for the batch, or None


class Attention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_heads
        # one matmul instead of three
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=config.bias)
        self.out = nn.Linear(config.hidden_size, config.hidden_size, bias=config.bias)
        self.attention_dropout = config.attention_dropout

    def forward(self, x: torch.Tensor, layout: Layout, rope: Rope = None) -> torch.Tensor:
        # x: [T, H]; rows of qkv are [q | k | v], each split into heads as in BERT: 3 x [T, A, D]
        T, H = x.shape
        q, k, v = self.qkv(x).view(T, 3, self.num_heads, H // self.num_heads).unbind(1)
        if rope is not None:  # positions enter here, as relative angles between each query and key
            q, k = rotate(q, *rope), rotate(k, *rope)
        y = attention(q, k, v, layout, self.attention_dropout if self.training else 0.0)
        return self.out(y.reshape(T, H))


class MLP(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.gated = config.gated
        self.act = F.silu if config.mlp == "swiglu" else F.gelu  # exact erf GELU, as in BERT and ModernBERT
        # gated: one matmul gives [input | gate], 2 x intermediate wide (ModernBERT's Wi and its chunk order)
        width = (2 if self.gated else 1) * config.intermediate_size
        self.fc1 = nn.Linear(config.hidden_size, width, bias=config.bias)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [T, H] -> [T, I] (gated: [T, 2I] -> act(input) * gate, [T, I]) -> [T, H]
        h = self.fc1(x)
        if self.gated:
            h, gate = h.chunk(2, dim=-1)
            return self.fc2(self.act(h) * gate)
        return self.fc2(self.act(h))


class Block(nn.Module):
    def __init__(self, config: BertConfig, index: int):
        super().__init__()
        self.pre_ln = config.pre_ln
        # embedding_norm: layer 0's attn_norm normalises the residual stream where it starts (the
        # embeddings), not only the attention's input: ModernBERT's embedding norm, under this layer's name
        self.norms_stream = index == 0 and config.embedding_norm
        self.attn = Attention(config)
        self.attn_norm = layer_norm(config)
        self.mlp = MLP(config)
        self.mlp_norm = layer_norm(config)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, layout: Layout, rope: Rope = None) -> torch.Tensor:
        if self.norms_stream:  # x: the embedding sum -> drop(norm(x)), ModernBERT's embedding output
            x = self.drop(self.attn_norm(x))
            x = x + self.drop(self.attn(x, layout, rope))
            return x + self.drop(self.mlp(self.mlp_norm(x)))
        if self.pre_ln:
            x = x + self.drop(self.attn(self.attn_norm(x), layout, rope))
            return x + self.drop(self.mlp(self.mlp_norm(x)))
        x = self.attn_norm(x + self.drop(self.attn(x, layout, rope)))
        return self.mlp_norm(x + self.drop(self.mlp(x)))


class MLMHead(nn.Module):
    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, bias=config.bias)
        self.norm = layer_norm(config)
        # the decoder's vocab bias stays with bias=False, as ModernBERT's (it carries the unigram prior)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder_weight = [word_embeddings]  # a list, so the tied weight is not registered twice

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        # h: [M, H] hidden states at the masked positions -> logits [M, V]
        h = self.norm(F.gelu(self.dense(h)))
        return F.linear(h, self.decoder_weight[0].weight, self.bias)


class BertForPreTraining(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        # decided once here: a registry lookup inside forward would break the compiled graph
        self.sentence_head = config.sentence_head
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(Block(config, i) for i in range(config.num_layers))
        if config.pre_ln:
            self.final_norm = layer_norm(config)
        if self.sentence_head:  # created in this order so that nsp init draws as before the objectives
            self.pooler = nn.Linear(config.hidden_size, config.hidden_size, bias=config.bias)
        self.mlm_head = MLMHead(config, self.embeddings.word_embeddings)
        if self.sentence_head:
            self.nsp_head = nn.Linear(config.hidden_size, 2, bias=config.bias)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.init_std
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, std)
        if isinstance(module, (nn.Linear, nn.LayerNorm)) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)

    def encode(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        position_ids: torch.Tensor,
        layout: Layout,
    ) -> torch.Tensor:
        """Hidden states of the batch's tokens, [T, H]."""
        c = self.config
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        # rotary: each token's angles once per batch, shared by every layer (as Hugging Face's models do)
        rope = rotary(position_ids, c.hidden_size // c.num_heads, c.rotary_theta) if c.position == "rotary" \
            else None
        for layer in self.layers:
            x = layer(x, layout, rope)
        return self.final_norm(x) if c.pre_ln else x

    def forward(
        self,
        input_ids: torch.Tensor,  # [T] int: the real tokens of all rows, concatenated, then padding
        token_type_ids: torch.Tensor,  # [T] int
        position_ids: torch.Tensor,  # [T] int: restarting at each sequence
        cu_seqlens: torch.Tensor,  # [S+1] int32: where each sequence starts and ends (see Layout)
        rows: torch.Tensor,  # [R, L] int: the token at each column of each row
        slots: torch.Tensor,  # [T] int: each token's place r * L + i in rows
        mlm_positions: torch.Tensor | None = None,  # [M] positions in [T]; None = every token
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """MLM logits ([M, V], or [T, V] without mlm_positions) and sentence logits [R, 2] (None without
        a sentence head)."""
        layout = Layout(cu_seqlens, rows, slots)
        x = self.encode(input_ids, token_type_ids, position_ids, layout)
        sentence_logits = None
        if self.sentence_head:
            cls = x[rows[:, 0]]  # [R, H]: each row's first token, [CLS]
            sentence_logits = self.nsp_head(torch.tanh(self.pooler(cls)))  # [R, 2]
        return self.mlm_head(x if mlm_positions is None else x[mlm_positions]), sentence_logits

    def padded(
        self,
        input_ids: torch.Tensor,  # [B, L] int
        token_type_ids: torch.Tensor,  # [B, L] int
        attention_mask: torch.Tensor | None = None,  # [B, L], 1/True = real token; None = no padding
        mlm_positions: torch.Tensor | None = None,  # [M] flat positions b * L + i; None = every position
        position_ids: torch.Tensor | None = None,  # [B, L]; None = 0..L-1 in every row
        piece_lengths: torch.Tensor | None = None,  # [P] packed rows: tokens of each piece, row-major
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`forward` on Hugging Face's padded rows: MLM logits ([M, V], or [B, L, V] without mlm_positions,
        padded positions getting a padding token's) and sentence logits [B, 2]. Reads the mask on the host:
        for tests, checks and tools; training batches come unpadded from the loader."""
        B, L = input_ids.shape
        flat = unpad(input_ids, token_type_ids, attention_mask, position_ids, piece_lengths)
        token_at = flat["rows"].reshape(-1)  # [B * L]: the flat token at each padded position
        at = token_at if mlm_positions is None else token_at[mlm_positions]
        mlm_logits, sentence_logits = self(**flat, mlm_positions=at)
        return (mlm_logits.view(B, L, -1) if mlm_positions is None else mlm_logits), sentence_logits

    def num_params(self, non_embedding: bool = True) -> int:
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            e = self.embeddings
            tables = ("word_embeddings", "position_embeddings", "token_type_embeddings")
            n -= sum(getattr(e, t).weight.numel() for t in tables if hasattr(e, t))
        return n


def unpad(
    input_ids: torch.Tensor,
    token_type_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.Tensor | None = None,
    piece_lengths: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Padded rows [B, L] (arguments as `BertForPreTraining.padded`) -> `forward`'s flat inputs, laid out
    as `trainer.data.collate` lays out shard rows, with one padding token at the end."""
    B, L = input_ids.shape
    real = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
    slots = real.reshape(-1).nonzero().squeeze(1)  # [n]: each real token's place b * L + i (a host sync)
    n = len(slots)
    rows = torch.full((B * L,), n, dtype=torch.long, device=input_ids.device)
    rows[slots] = torch.arange(n, device=input_ids.device)
    lengths = real.sum(1) if piece_lengths is None else piece_lengths
    sequences = torch.cat([lengths, lengths.new_ones(1)])  # the rows or pieces, then the padding token
    positions = slots % L if position_ids is None else position_ids.reshape(-1)[slots]

    def flat(x: torch.Tensor) -> torch.Tensor:  # [B, L] -> [n + 1]: the real tokens, then padding (0)
        return F.pad(x.reshape(-1)[slots], (0, 1))

    return {
        "input_ids": flat(input_ids), "token_type_ids": flat(token_type_ids),
        "position_ids": F.pad(positions, (0, 1)), "rows": rows.view(B, L), "slots": F.pad(slots, (0, 1)),
        "cu_seqlens": F.pad(torch.cumsum(sequences, 0), (1, 0)).int(),
    }


def compile_model(model: BertForPreTraining, backend: str | Callable = "inductor") -> BertForPreTraining:
    """Compile forward (and with it backward) as one graph, in place: state-dict names stay as they are.
    fullgraph: a graph break is an error, not a silent slowdown. dynamic: every size symbolic from the
    start, so that batches of other token, prediction and sequence counts reuse the graph (with torch's
    automatic dynamic shapes each size that changes would cost one more compilation, four in a run).
    A run compiles twice: training, and evaluation (no grad); a batch of one row once more, as torch
    specialises sizes 0 and 1 (tests/trainer/test_unpadded.py counts them); under inductor, a batch outside
    the first graph's guards once more: on the CPU, the first whose tokens fill every row (the token count
    bounded by rows x row length: BENCHMARKS.md, "Training step"); on an H200, a row count on the other side
    of 255 (the matmul-padding pass guards it; tests/trainer/test_cuda.py counts at most two)."""
    model.compile(backend=backend, fullgraph=True, dynamic=True)
    return model


def pretraining_loss(
    mlm_logits: torch.Tensor,  # [M, V]
    mlm_labels: torch.Tensor,  # [M]
    sentence_logits: torch.Tensor | None = None,  # [B, 2]
    sentence_labels: torch.Tensor | None = None,  # [B]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(total, mlm, sentence) losses: mean cross-entropy over masked tokens plus, with a sentence task (NSP
    or SOP), mean cross-entropy over rows, as in BERT and ALBERT; MLM alone without one."""
    mlm = F.cross_entropy(mlm_logits.float(), mlm_labels)
    if sentence_logits is None:
        return mlm, mlm, None
    sentence = F.cross_entropy(sentence_logits.float(), sentence_labels)
    return mlm + sentence, mlm, sentence


def flops_per_token(config: BertConfig, seq_len: int, masked_fraction: float = 0.15) -> float:
    """Training FLOPs per token: 6 x non-embedding matmul params, attention scores, masked-position head."""
    H, L, inner = config.hidden_size, config.num_layers, config.intermediate_size
    dense = L * (4 * H * H + (3 if config.gated else 2) * H * inner)  # qkv + out + mlp (gated: 3 matrices)
    attention = L * 2 * seq_len * H  # QK^T and AV, per query token
    head = masked_fraction * (H * H + H * config.vocab_size)  # dense + decoder, only at masked positions
    return 6 * (dense + attention + head)
