# The Annotated Transformer's model code (harvardnlp/annotated-transformer), taken unmodified
# from the_annotated_transformer.py: its torch imports and the classes and functions of the
# model (the notebook's other imports, spacy, altair, torchtext, are not installed here).
import ast, pathlib
import torch
src = pathlib.Path(__file__).with_name("the_annotated_transformer.py").read_text()
tree = ast.parse(src)
MODEL = {"EncoderDecoder", "Generator", "clones", "Encoder", "LayerNorm", "SublayerConnection",
         "EncoderLayer", "Decoder", "DecoderLayer", "subsequent_mask", "attention",
         "MultiHeadedAttention", "PositionwiseFeedForward", "Embeddings", "PositionalEncoding",
         "make_model"}
def torch_import(n):
    names = [a.name for a in n.names]
    mod = getattr(n, "module", None) or ""
    return any(x.split(".")[0] in ("torch", "math", "copy") for x in names + [mod]) and "distributed" not in mod and "parallel" not in mod and "multiprocessing" not in str(names) and "lr_scheduler" not in mod and "utils.data" not in mod and "torchtext" not in mod
keep = [n for n in tree.body if (isinstance(n, (ast.Import, ast.ImportFrom)) and torch_import(n))
        or (isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name in MODEL)]
exec(compile(ast.Module(body=keep, type_ignores=[]), "the_annotated_transformer.py", "exec"))
torch.manual_seed(0)
model = make_model(11, 11, N=2, d_model=32, d_ff=64, h=4, dropout=0.0).eval()
src_mask = torch.ones(1, 1, 10, dtype=torch.bool)

def encode(src):
    return model.encode(src, src_mask)

def decode(memory, tgt):
    tgt_mask = subsequent_mask(tgt.size(1))
    return model.generator(model.decode(memory, src_mask, tgt, tgt_mask))
