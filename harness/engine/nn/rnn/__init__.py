"""burn's recurrent modules (crates/burn-nn/src/modules/rnn/): gate controller, LSTM, BiLSTM,
GRU, BiGRU."""

from .gate_controller import GateController
from .gru import BiGru, BiGruConfig, Gru, GruConfig
from .lstm import BiLstm, BiLstmConfig, Lstm, LstmConfig, LstmState

__all__ = [
    "BiGru",
    "BiGruConfig",
    "BiLstm",
    "BiLstmConfig",
    "GateController",
    "Gru",
    "GruConfig",
    "Lstm",
    "LstmConfig",
    "LstmState",
]
