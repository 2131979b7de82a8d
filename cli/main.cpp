// The `aotrace` command line (DESIGN §7).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"

using namespace aotrace;

namespace {

// `check` for a hidden option: CLI11 names no hidden option in its errors, so the message does
// (main prints it without CLI11's empty name). A value that is no number at all (IsMember
// throws for it) is named too.
CLI::Validator naming(const std::string& flag, CLI::Validator check) {
  return CLI::Validator(
      [flag, check](std::string& value) {
        std::string error;
        try {
          error = check(value);
        } catch (const CLI::ValidationError&) {
          error = value + " not in " + check.get_description();
        }
        return error.empty() ? error : flag + ": " + error;
      },
      check.get_description());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"aotrace — ahead-of-time trace compiler for PyTorch programs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("aotrace ") + AOTRACE_VERSION);

  std::string yaml;
  cli::CompileOptions compile;
  auto* c = app.add_subcommand("compile", "capture, lower and write a bundle");
  c->add_option("spec", yaml, "profile YAML")->required();
  c->add_option("-o,--output", compile.output, "bundle directory (default: ./NAME.aot)");
  c->add_option("--triple", compile.triple, "target triple (default: the host)");
  c->add_option("--cpu", compile.cpu,
                "build the kernels for this CPU only (default: x86-64-v2, plus a faster library "
                "for this host's level, x86-64-v3 or -v4, chosen at load)");
  c->add_option("--cuda-arch", compile.cuda_archs,
                "the GPUs of `targets: [cuda]`: a cubin per arch and PTX for the oldest, which newer GPUs' drivers "
                "compile (default: sm_80,sm_90)")
      ->delimiter(',');
  c->add_option("--cuda-emulation-library", compile.cuda_emulation_library,
                "tests: also write the CUDA kernels as host code for the runtime's fake CUDA driver")
      ->group("");  // hidden (driver/compile.h)
  c->add_option("--cuda-warp-reduce-min", compile.cuda_warp_reduce_min,
                "measuring on a GPU: a warp per output for f32 sums, maxima and minima over at least N positions "
                "(default 256)")
      ->check(naming("--cuda-warp-reduce-min", CLI::Range(int64_t{1}, int64_t{1} << 30)))
      ->group("");  // hidden (driver/compile.h)
  c->add_option("--cuda-vector-elements", compile.cuda_vector_elements,
                "measuring on a GPU: innermost elements per thread of elementwise kernels, 1, 2 or 4 (default 4)")
      ->check(naming("--cuda-vector-elements", CLI::IsMember({int64_t{1}, int64_t{2}, int64_t{4}})))
      ->group("");  // hidden (driver/compile.h)
  c->add_option("--cuda-gemm-stages", compile.cuda_gemm_stages,
                "measuring on a GPU: shared-memory stages of tiled matmuls and convs, 1 or 2 (default 1)")
      ->check(naming("--cuda-gemm-stages", CLI::IsMember({int64_t{1}, int64_t{2}})))
      ->group("");  // hidden (driver/compile.h)
  c->add_option("--cuda-split-reduce-chunk", compile.cuda_split_reduce_chunk,
                "measuring on a GPU: f32 sums, maxima and minima of many positions into few outputs are two reductions, "
                "the first over chunks of at least N positions (default 2048; 2^40 never splits)")
      ->check(naming("--cuda-split-reduce-chunk", CLI::Range(int64_t{1}, int64_t{1} << 40)))
      ->group("");  // hidden (driver/compile.h)
  c->add_option("--cuda-block-row-min", compile.cuda_block_row_min,
                "measuring on a GPU: sorts, topks over a static axis, and cumsums and scatters along the innermost axis "
                "take a thread block per row from N positions, else a thread (default 256; 2^40: a thread always)")
      ->check(naming("--cuda-block-row-min", CLI::Range(int64_t{2}, int64_t{1} << 40)))
      ->group("");  // hidden (driver/compile.h)
  c->add_option("--depfile", compile.depfile,
                "also write a Make/Ninja depfile: OUT/bundle.fb and every file the compile read "
                "(the spec, the script, its own imported modules, the files it opened)");
  auto* cache_dir = c->add_option("--cache-dir", compile.cache_dir,
                                  "compile cache folder (default: $XDG_CACHE_HOME/aotrace or ~/.cache/aotrace; "
                                  "AOTRACE_NO_CACHE=1 turns the default off)");
  c->add_flag("--no-cache", compile.no_cache, "neither read nor write the compile cache")->excludes(cache_dir);
  c->add_option("--cache-max-mb", compile.cache_max_mb,
                "bound on the cache's size in MiB; the least recently used bundles go first (default 2048)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  c->add_flag("--timings", compile.timings,
              "print where the compile's time went: capture, each lowering pass and LLVM phase (summed over "
              "variants), golden vectors, linking, writing");
  std::string winograd = "auto";
  c->add_option("--winograd", winograd,
                "3x3 stride-1 convs as Winograd transforms around GEMMs (see --winograd-tile): auto (where it pays), "
                "always, or never (the direct conv)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  std::string winograd_tile = "auto";
  c->add_option("--winograd-tile", winograd_tile,
                "Winograd's output tile: auto (F(4x4,3x3), 36/144 of the multiplies, within ~3e-6 of the direct conv "
                "relative to the output's largest magnitude, where the batch has 16 tiles of 4x4 or more; F(2x2,3x3), "
                "16/36 and a few ulps, below), 2 (F(2x2) for every conv) or 4 (F(4x4) for every conv)")
      ->check(CLI::IsMember({"auto", "2", "4"}));
  c->add_option("--dump", compile.dump,
                "print the result of these lowering passes to stderr, e.g. --dump fuse,schedule or --dump all "
                "(the passes: decompose, fold-constants, cse, dce, conv-taps, channels-last, winograd, pad-conv-inputs, pack-weights, fuse, "
                "schedule, cpu-plan, cuda-plan, codegen, memory-plan); the compile cache is not used")
      ->delimiter(',');
  c->add_option("--report", compile.report,
                "write a JSON report: per variant its guards, kernels with the graph nodes and source lines each "
                "computes, per-pass timings, arena and weight sizes; the cache hit or miss");
  c->add_option("-j,--jobs", compile.jobs,
                "variants lowered at once (default: the CPUs divided by the kernel libraries each builds); "
                "the bundle is the same for any value")
      ->check(CLI::Range(1, 1024));
  c->add_flag("-q,--quiet", compile.quiet, "no progress lines on stderr (the summary line and warnings stay)");

  bool json = false, graph = false;
  auto* e = app.add_subcommand("explain", "capture only: graphs, breaks, guards, timings");
  e->add_option("spec", yaml, "profile YAML")->required();
  e->add_flag("--json", json, "one JSON object per profile");
  e->add_flag("--graph", graph, "include the captured graphs");

  auto* prof = app.add_subcommand("profiles", "shape-profile YAML: a first spec for a script, its JSON Schema, and checks without lowering");
  prof->require_subcommand(1);
  auto* prof_schema = prof->add_subcommand("schema", "print the JSON Schema (draft 2020-12) of the profile YAML");
  auto* prof_check = prof->add_subcommand(
      "check", "everything compile would reject, without lowering: schema, capture and graph breaks, max_variants");
  prof_check->add_option("spec", yaml, "profile YAML")->required();
  prof_check->add_flag("--json", json, "one JSON object");
  std::filesystem::path init_script, init_output;
  std::string init_call;
  bool init_force = false;
  auto* prof_init = prof->add_subcommand(
      "init", "write a first, commented spec for a script: its entries, and inputs inferred from the model");
  prof_init->add_option("script", init_script, "the Python script that builds the model")->required();
  prof_init->add_option("--call", init_call, "the entry: an nn.Module instance or a function of the script "
                                              "(default: the last nn.Module it defines, else its last function)");
  prof_init->add_option("-o,--output", init_output, "the spec to write (default: ./SCRIPT_STEM.yaml)");
  prof_init->add_flag("--force", init_force, "replace the spec if it exists");
  std::filesystem::path rec_driver, rec_spec, rec_output, sizes_file;
  std::string rec_entry;
  auto* prof_record = prof->add_subcommand(
      "record", "run a driver script that calls the model and record the input sizes of every call");
  prof_record->add_option("driver", rec_driver, "the driver: a Python script that calls the spec's entry")->required();
  prof_record->add_option("--spec", rec_spec, "the spec whose entry is recorded")->required();
  prof_record->add_option("--entry", rec_entry, "the entry (default: the spec's only one)");
  prof_record->add_option("-o,--output", rec_output, "the sizes file to write (JSON)")->required();
  int sug_max = 0;
  bool sug_write = false, sug_no_measure = false;
  auto* prof_suggest = prof->add_subcommand(
      "suggest", "compare a dynamic range, padding buckets and static sizes on recorded sizes");
  prof_suggest->add_option("spec", yaml, "profile YAML")->required();
  prof_suggest->add_option("--sizes", sizes_file, "the sizes file of `profiles record`")->required();
  prof_suggest->add_option("--max-variants", sug_max, "the most variants (default: the spec's max_variants)");
  prof_suggest->add_flag("--write", sug_write, "put the suggestion into the spec's dims (comments kept)");
  prof_suggest->add_flag("--no-measure", sug_no_measure, "do not compile one variant to measure the compile time");

  // run's words, --help included, go to the parser it shares with aotrace_run (run_tool.h).
  auto* r = app.add_subcommand("run", "run a bundle on .npy inputs (`aotrace run --help` lists its options)");
  r->prefix_command();
  r->set_help_flag();

  cli::BenchOptions bench;
  auto* bn = app.add_subcommand("bench", "time an entry on random inputs: median, p10, p90 latency");
  bn->add_option("bundle", bench.bundle, "bundle directory")->required();
  bn->add_option("--entry", bench.entry, "entry name (default: the only entry, or 'forward')");
  bn->add_option("--shape", bench.shapes, "NAME=DIMS (e.g. x=8x784), once per input; "
                                          "default: the shape every variant declares");
  bn->add_option("--threads", bench.threads, "kernel threads, 0 = AOTRACE_NUM_THREADS or all CPUs")
      ->check(CLI::Range(0, 1024));
  auto* iterations = bn->add_option("--iterations", bench.iterations, "timed calls (after warm-up)")
                         ->check(CLI::PositiveNumber);
  bn->add_option("--min-time", bench.min_time, "seconds of timed calls (default 1; at least 3 calls)")
      ->check(CLI::PositiveNumber)
      ->excludes(iterations);
  bn->add_flag("--json", bench.json, "one JSON object");
  bn->add_option("--profile", bench.profile,
                 "also time each kernel call and list the N slowest kernels with their share of the call")
      ->check(CLI::PositiveNumber);
  bn->add_option("--device", bench.device,
                 "where the kernels run: cpu (default), or cuda, the bundle's CUDA kernels on GPU 0 with the "
                 "inputs and outputs in GPU memory (each call returns once its outputs are written)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  std::filesystem::path bundle_dir;
  auto* ins = app.add_subcommand("inspect", "what a bundle holds: versions, variants, files, hardware");
  ins->add_option("bundle", bundle_dir, "bundle directory")->required();
  ins->add_flag("--json", json, "one JSON object");
  auto* ver = app.add_subcommand("verify", "check a bundle's integrity and that it runs here");
  ver->add_option("bundle", bundle_dir, "bundle directory")->required();

  try {
    cli::refuse_unknown_subcommand(app, std::vector<std::string>(argv + 1, argv + argc));
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& err) {
      const std::string what = err.what();
      if (err.get_exit_code() != 0 && what.rfind(": ", 0) == 0) {  // a hidden option (no name from CLI11)
        std::string named = what.substr(2);
        if (named.rfind("--", 0) != 0) {  // not a check's (naming): a missing value; the flag from argv
          for (int i = argc - 1; i > 0; --i)
            if (std::string word = argv[i]; word.rfind("--cuda-", 0) == 0) {
              named = word.substr(0, word.find('=')) + ": " + named;
              break;
            }
        }
        std::cerr << named << "\nRun with --help for more information.\n";
        return 2;
      }
      int code = app.exit(err);
      return code == 0 ? 0 : 2;
    }
    if (*c) {
      using W = lowering::Options::Winograd;
      compile.winograd = winograd == "always" ? W::always : winograd == "never" ? W::never : W::automatic;
      compile.winograd_tile = winograd_tile == "auto" ? 0 : std::stoll(winograd_tile);
      return cli::compile_command(yaml, compile);
    }
    if (*e) return cli::explain_command(yaml, json, graph);
    if (*prof_schema) return cli::profiles_schema_command();
    if (*prof_check) return cli::profiles_check_command(yaml, json);
    if (*prof_record) return cli::profiles_record_command(rec_driver, rec_spec, rec_entry, rec_output);
    if (*prof_suggest) return cli::profiles_suggest_command(yaml, sizes_file, sug_max, sug_write, !sug_no_measure);
    if (*prof_init) return cli::profiles_init_command(init_script, init_call, init_output, init_force);
    if (*r) return cli::run_command(r->remaining());
    if (*bn) return cli::bench_command(bench);
    if (*ins) return cli::inspect_command(bundle_dir, json);
    if (*ver) return cli::verify_command(bundle_dir);
  } catch (const UserError& err) {
    std::cerr << err.render();
    return 1;
  } catch (const InternalError& err) {
    std::cerr << err.render();
    return 3;
  } catch (const std::exception& err) {
    std::cerr << "aotrace: internal error (this is a bug in aotrace): " << err.what() << "\n";
    return 3;
  }
  return 2;
}
