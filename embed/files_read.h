// Private to embed/: the files the embedded interpreter reads, for depfiles and the compile
// cache (Interpreter::files_read, embed.h).
#pragma once

namespace aotrace::embed {

// Installs a CPython audit hook (PEP 578) that records every file opened for reading (the
// "open" event of open(), io.open_code and os.open). Called once, after Py_Initialize.
void install_file_read_hook();

// Makes every later import compile the user's modules (every file the depfile would list: not
// the Python installation's or the system's) from their source, never from a __pycache__ .pyc,
// and write none. Called once, after Py_Initialize.
void compile_user_modules_from_source();

}  // namespace aotrace::embed
