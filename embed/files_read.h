// Private to embed/: the files the embedded interpreter reads, for depfiles and the compile
// cache (Interpreter::files_read, embed.h).
#pragma once

namespace aotrace::embed {

// Installs a CPython audit hook (PEP 578) that records every file opened for reading (the
// "open" event of open(), io.open_code and os.open). Called once, after Py_Initialize.
void install_file_read_hook();

}  // namespace aotrace::embed
