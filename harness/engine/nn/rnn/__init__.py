"""burn's recurrent modules (crates/burn-nn/src/modules/rnn/): gate controller, LSTM, BiLSTM,
GRU, BiGRU, RNN, BiRNN."""

from .basic import BiRnn, BiRnnConfig, Rnn, RnnConfig, RnnState
from .gate_controller import GateController
from .gru import BiGru, BiGruConfig, Gru, GruConfig
from .lstm import BiLstm, BiLstmConfig, Lstm, LstmConfig, LstmState

__all__ = [
    "BiGru",
    "BiGruConfig",
    "BiLstm",
    "BiLstmConfig",
    "BiRnn",
    "BiRnnConfig",
    "GateController",
    "Gru",
    "GruConfig",
    "Lstm",
    "LstmConfig",
    "LstmState",
    "Rnn",
    "RnnConfig",
    "RnnState",
]
