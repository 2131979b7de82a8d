# capture: call=m inputs=x:f32[2,5,3],h:f32[2,2,4],c:f32[2,2,4]
import torch
import torch.nn as nn


class Recurrent(nn.Module):
    """LSTM, GRU and RNN layers as models use them: batch_first, stacked, bidirectional,
    with and without initial states."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True)
        self.gru = nn.GRU(3, 4, bidirectional=True)
        self.rnn = nn.RNN(3, 4, nonlinearity="relu", bias=False)

    def forward(self, x, h, c):
        out, (h_n, c_n) = self.lstm(x, (h, c))
        g, g_n = self.gru(x.transpose(0, 1))
        r, r_n = self.rnn(x[0])  # unbatched: (T, H_in)
        return out, h_n, c_n, g, g_n, r, r_n


m = Recurrent()
