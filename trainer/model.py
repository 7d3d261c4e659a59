"""BERT for pre-training (masked LM, plus next sentence or sentence order prediction), in one file.

Numerically the model is Hugging Face `BertForPreTraining` (post-LN, exact erf GELU, LayerNorm eps 1e-12,
tanh pooler on [CLS], MLM head dense -> GELU -> LayerNorm -> decoder tied to the word embeddings plus
its own bias), so weights convert both ways. Two differences in *how* it computes, not *what*:

- Unpadding: with an attention mask, every token-wise layer (embeddings LayerNorm, QKV, output
  projection, MLP, LayerNorms) runs on the real tokens only, a [T, H] matrix; only attention itself
  sees the padded [B, heads, L, head_dim] layout. Padding therefore costs nothing in the layers that
  hold ~all FLOPs at L=128, and can never change a real token's output.
- The MLM head projects to the vocab only at the masked positions (gather first): at 15% masking that
  is ~7x less work in the largest matmul of a small model.
- Packed rows (objective `none`): a row may hold several pieces `[CLS] text [SEP]` of different documents.
  Attention gets a [B, 1, L, L] block-diagonal mask (a token sees the tokens of its own piece) and position
  ids restart in each piece, so a piece computes exactly what it would as a row of its own. Measured on
  CPU (bench/train_packing.py), this takes 0.57x the attention time of a grid of pieces padded to the
  longest piece, [pieces, heads, longest, head_dim]: pieces vary in length, and the grid pays for the longest.

The sentence head (pooler + 2-way linear) exists for the objectives with a sentence task: `nsp` and `sop`
(the same head as Hugging Face's `cls.seq_relationship`; the label means NotNext or swapped). With `none`
the model is Hugging Face's `BertForMaskedLM`: no pooler, no sentence head.

State-dict names (frozen; `trainer/export.py` maps them to Hugging Face):
  embeddings.{word_embeddings,position_embeddings,token_type_embeddings}.weight, embeddings.norm.{weight,bias}
  layers.N.attn.qkv.{weight,bias}   fused [3H, H]: rows 0:H query, H:2H key, 2H:3H value (HF head order)
  layers.N.attn.out.{weight,bias}   layers.N.attn_norm.{weight,bias}
  layers.N.mlp.fc1.{weight,bias}    layers.N.mlp.fc2.{weight,bias}   layers.N.mlp_norm.{weight,bias}
  final_norm.{weight,bias}          only with pre_ln=True (a pre-LN stack needs a last LayerNorm)
  pooler.{weight,bias}   mlm_head.dense.{weight,bias}   mlm_head.norm.{weight,bias}   mlm_head.bias
  nsp_head.{weight,bias}                 the sentence head (nsp or sop); pooler and it absent with `none`
The MLM decoder weight *is* embeddings.word_embeddings.weight (tied), so it has no entry of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from trainer.config import check_model


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 0  # 0: 4 * hidden_size
    max_position: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1  # hidden states (embeddings, attention output, MLP output)
    attention_dropout: float = 0.1  # attention probabilities
    layer_norm_eps: float = 1e-12
    pre_ln: bool = False  # LayerNorm before each sublayer (+ a final one): more stable at depth/high lr
    init_std: float = 0.02
    objective: str = "nsp"  # nsp | sop: pooler + sentence head; none: masked LM only (corpusprep.objectives)

    @property
    def sentence_head(self) -> bool:
        return self.objective != "none"

    def __post_init__(self) -> None:
        if self.intermediate_size == 0 and isinstance(self.hidden_size, int):
            self.intermediate_size = 4 * self.hidden_size
        check_model({f.name: getattr(self, f.name) for f in fields(self)})  # a config, --set, a checkpoint


# (layers, hidden, heads); intermediate is 4 * hidden unless overridden. tiny..medium as in Turc et al. 2019.
PRESETS: dict[str, tuple[int, int, int]] = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}


def preset(name: str, **overrides) -> BertConfig:
    """A config from a named preset; any BertConfig field can be overridden."""
    if name not in PRESETS:
        raise ValueError(f"unknown model preset {name!r} (choose from {', '.join(PRESETS)})")
    layers, hidden, heads = PRESETS[name]
    known = {f.name for f in fields(BertConfig)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"unknown model option(s): {', '.join(sorted(unknown))}")
    args = {"num_layers": layers, "hidden_size": hidden, "num_heads": heads} | overrides
    return BertConfig(**args)


class Embeddings(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        # post-LN BERT normalises the embedding sum; pre-LN normalises inside each block instead
        self.norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps) if not c.pre_ln else nn.Identity()
        self.drop = nn.Dropout(c.dropout)

    def forward(
        self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, position_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        # input_ids, token_type_ids, position_ids: [B, L] -> [B, L, H]; positions 0..L-1 unless given
        positions = torch.arange(input_ids.shape[1], device=input_ids.device) if position_ids is None else (
            position_ids
        )
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(positions)
        return self.drop(self.norm(x))


class Attention(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.num_heads = c.num_heads
        self.qkv = nn.Linear(c.hidden_size, 3 * c.hidden_size)  # one matmul instead of three
        self.out = nn.Linear(c.hidden_size, c.hidden_size)
        self.attention_dropout = c.attention_dropout

    def forward(self, x: torch.Tensor, layout: Layout) -> torch.Tensor:
        # x: [T, H] real tokens only (or all B*L when unpadded == padded)
        T, H = x.shape
        B, L = layout.batch, layout.length
        qkv = self.qkv(x)  # [T, 3H]
        if layout.real is not None:  # scatter into the padded grid just for attention
            qkv = qkv.new_zeros(B * L, 3 * H).index_copy_(0, layout.real, qkv)
        # rows of qkv are [q | k | v], each split into heads as in BERT: 3 x [B, A, L, D]
        q, k, v = qkv.view(B, L, 3, self.num_heads, H // self.num_heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=layout.key_mask, dropout_p=self.attention_dropout if self.training else 0.0
        )  # [B, A, L, D]; padded queries attend to real keys, so no NaN, and are dropped below
        y = y.transpose(1, 2).reshape(B * L, H)
        if layout.real is not None:
            y = y.index_select(0, layout.real)  # [T, H]
        return self.out(y)


class MLP(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.fc1 = nn.Linear(c.hidden_size, c.intermediate_size)
        self.fc2 = nn.Linear(c.intermediate_size, c.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))  # exact erf GELU, as in BERT


class Block(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.pre_ln = c.pre_ln
        self.attn = Attention(c)
        self.attn_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.mlp = MLP(c)
        self.mlp_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor, layout: Layout) -> torch.Tensor:
        if self.pre_ln:
            x = x + self.drop(self.attn(self.attn_norm(x), layout))
            return x + self.drop(self.mlp(self.mlp_norm(x)))
        x = self.attn_norm(x + self.drop(self.attn(x, layout)))
        return self.mlp_norm(x + self.drop(self.mlp(x)))


class MLMHead(nn.Module):
    def __init__(self, c: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(c.vocab_size))
        self.decoder_weight = [word_embeddings]  # a list, so the tied weight is not registered twice

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        # h: [M, H] hidden states at the masked positions -> logits [M, V]
        h = self.norm(F.gelu(self.dense(h)))
        return F.linear(h, self.decoder_weight[0].weight, self.bias)


class Layout:
    """Where the real tokens of a padded [B, L] batch live, for the unpadded layers and for attention.

    real: flat positions b * L + i of the real tokens ([T], None when nothing is padding).
    rows: for every flat position, its row in the unpadded [T, H] activations (valid at real tokens).
    key_mask: what attention may see: [B, 1, 1, L] real keys; with `piece_lengths`, [B, 1, L, L] the keys of
    the query's own piece (padded queries see the padding: never an empty softmax row). None: everything.
    """

    def __init__(
        self, attention_mask: torch.Tensor | None, batch: int, length: int,
        piece_lengths: torch.Tensor | None = None,  # [P] tokens of each piece, in row-major order
    ):
        self.batch, self.length = batch, length
        if piece_lengths is None and (attention_mask is None or bool(attention_mask.all())):
            self.key_mask = self.real = self.rows = None
            return
        if attention_mask is None:
            attention_mask = torch.ones(batch, length, dtype=torch.bool, device=piece_lengths.device)
        flat = attention_mask.reshape(-1).bool()
        self.rows = torch.cumsum(flat, 0) - 1  # [B*L]: valid where flat is True
        self.real = flat.nonzero().squeeze(1)  # [T]
        if piece_lengths is None:
            self.key_mask = attention_mask.bool()[:, None, None, :]
            return
        # Pieces are contiguous runs of the real tokens in row-major order: number them, padding -1.
        piece = torch.full_like(flat, -1, dtype=torch.long)
        piece[self.real] = torch.repeat_interleave(torch.arange(len(piece_lengths), device=flat.device),
                                                   piece_lengths)  # fmt: skip
        piece = piece.view(batch, length)
        self.key_mask = (piece[:, :, None] == piece[:, None, :])[:, None]  # [B, 1, L, L]

    def take(self, x: torch.Tensor, flat_positions: torch.Tensor) -> torch.Tensor:
        """Rows of the [T, H] activations at flat positions (b * L + i) of the padded grid."""
        return x.index_select(0, flat_positions if self.rows is None else self.rows[flat_positions])


class BertForPreTraining(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        if config.pre_ln:
            self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        if config.sentence_head:  # created in this order so that nsp init draws as before the objectives
            self.pooler = nn.Linear(config.hidden_size, config.hidden_size)
        self.mlm_head = MLMHead(config, self.embeddings.word_embeddings)
        if config.sentence_head:
            self.nsp_head = nn.Linear(config.hidden_size, 2)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.init_std
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def encode(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        piece_lengths: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Layout]:
        """Hidden states of the real tokens, [T, H], and the layout that locates them in [B, L]."""
        B, L = input_ids.shape
        layout = Layout(attention_mask, B, L, piece_lengths)
        x = self.embeddings(input_ids, token_type_ids, position_ids).reshape(B * L, -1)
        if layout.real is not None:
            x = x.index_select(0, layout.real)  # [T, H]: padding leaves here and never comes back
        for layer in self.layers:
            x = layer(x, layout)
        if self.config.pre_ln:
            x = self.final_norm(x)
        return x, layout

    def forward(
        self,
        input_ids: torch.Tensor,  # [B, L] int
        token_type_ids: torch.Tensor,  # [B, L] int
        attention_mask: torch.Tensor | None = None,  # [B, L], 1/True = real token; None = no padding
        mlm_positions: torch.Tensor | None = None,  # [M] flat positions b * L + i; None = every position
        position_ids: torch.Tensor | None = None,  # [B, L]; None = 0..L-1 in every row
        piece_lengths: torch.Tensor | None = None,  # [P] packed rows: tokens of each piece, row-major
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """MLM logits ([M, V], or [B, L, V] without mlm_positions) and sentence logits [B, 2] (None
        without a sentence head)."""
        B, L = input_ids.shape
        x, layout = self.encode(input_ids, token_type_ids, attention_mask, position_ids, piece_lengths)
        sentence_logits = None
        if self.config.sentence_head:
            cls = layout.take(x, torch.arange(B, device=x.device) * L)  # [B, H]
            sentence_logits = self.nsp_head(torch.tanh(self.pooler(cls)))  # [B, 2]
        if mlm_positions is None:
            every = torch.arange(B * L, device=x.device)
            if layout.real is not None:  # padded positions get the (meaningless) first row, as a filler
                every = torch.where(attention_mask.reshape(-1).bool(), every, layout.real[0])
            return self.mlm_head(layout.take(x, every)).view(B, L, -1), sentence_logits
        return self.mlm_head(layout.take(x, mlm_positions)), sentence_logits

    def num_params(self, non_embedding: bool = True) -> int:
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            e = self.embeddings
            tables = (e.word_embeddings, e.position_embeddings, e.token_type_embeddings)
            n -= sum(m.weight.numel() for m in tables)
        return n


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
    dense = L * (4 * H * H + 2 * H * inner)  # qkv + out + mlp
    attention = L * 2 * seq_len * H  # QK^T and AV, per query token
    head = masked_fraction * (H * H + H * config.vocab_size)  # dense + decoder, only at masked positions
    return 6 * (dense + attention + head)
