import torch
from model import TransformerModel, RNNModel
torch.manual_seed(0)
transformer = TransformerModel(ntoken=50, ninp=32, nhead=2, nhid=64, nlayers=2, dropout=0.0).eval()
lstm = RNNModel('LSTM', ntoken=50, ninp=32, nhid=32, nlayers=2, dropout=0.0).eval()
