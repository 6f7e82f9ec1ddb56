// _twinscale: the compiled half of `import twinscale` (python/twinscale/ is the other).
// It runs the CLI's own sub-commands inside the Python process — the same registration
// (cli::add_all_commands), option parsing and code paths as the `twinscale` executable —
// and hands back what they print, so a Python result is exactly the CLI's `--json` output.
// An error is raised as the Python class of twinscale/errors.py that mirrors its C++ type,
// carrying the message the CLI prints after "twinscale: error: ".
#include <exception>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "backend/error.hpp"
#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "config/error.hpp"
#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "diagnose/error.hpp"
#include "faults/error.hpp"
#include "formats/chakra.hpp"
#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/schedule_json.hpp"
#include "sim/error.hpp"
#include "study/store.hpp"
#include "topology/fabric.hpp"

namespace py = pybind11;

namespace twinscale::python {

namespace {

/// A usage problem found before CLI11 parses (an unknown sub-command): the CLI's exit 2.
class UsageProblem : public std::runtime_error {
public:
  explicit UsageProblem(const std::string& what) : std::runtime_error(what) {}
};

/// An exception thrown while CLI11 parses the options (a value checked by an option's
/// callback): the CLI reports any of them as invalid input (exit 1).
class ParseProblem : public std::runtime_error {
public:
  explicit ParseProblem(const std::string& what) : std::runtime_error(what) {}
};

/// The Python class (twinscale/errors.py) and message of a C++ exception, as main() reports it.
struct Raised {
  std::string kind;
  std::string message;
};

Raised classify(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const CLI::ParseError& e) {
    return {"UsageError", e.what()};
  } catch (const UsageProblem& e) {
    return {"UsageError", e.what()};
  } catch (const ParseProblem& e) {
    return {"InputError", e.what()};
  } catch (const config::ConfigError& e) {
    return {"ConfigError", e.what()};
  } catch (const schedules::JobError& e) {
    return {"JobError", e.what()};
  } catch (const schedules::ScheduleError& e) {
    return {"ScheduleError", e.what()};
  } catch (const schedules::InputFileError& e) {
    return {"InputFileError", e.what()};
  } catch (const topology::TopologyError& e) {
    return {"TopologyError", e.what()};
  } catch (const faults::FaultError& e) {
    return {"FaultError", e.what()};
  } catch (const sim::SimError& e) {
    return {"SimError", e.what()};
  } catch (const backend::BackendError& e) {
    return {"BackendError", e.what()};
  } catch (const formats::ChakraError& e) {
    return {"ChakraError", e.what()};
  } catch (const study::StoreError& e) {
    return {"StoreError", e.what()};
  } catch (const diagnose::DiagnoseError& e) {
    return {"DiagnoseError", e.what()};
  } catch (const Error& e) {
    return {"InputError", e.what()};
  } catch (const std::logic_error& e) {
    return {"InternalError", e.what()};
  } catch (const std::exception& e) {
    return {"InternalError", std::string("internal error (an untyped exception): ") + e.what()};
  } catch (...) {
    return {"InternalError", "internal error (an exception of unknown type)"};
  }
}

/// Raises `r` as its twinscale.errors class (the GIL held).
[[noreturn]] void raise_python(const Raised& r) {
  const py::object cls = py::module_::import("twinscale.errors").attr(r.kind.c_str());
  const py::object message =
      py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(r.message.data(), r.message.size(), "replace"));
  PyErr_SetObject(cls.ptr(), message.ptr());
  throw py::error_already_set();
}

/// std::cout and std::cerr are process-wide, and SimGrid runs one engine per process: one
/// command at a time.
std::mutex& run_mutex() {
  static std::mutex m;
  return m;
}

/// Points `stream` at `buffer` until destroyed, then restores its buffer, its format
/// (flags, precision, fill) and a good state: in one process, a command must not leave a
/// std::fixed or a failed stream behind for the next (the executable runs one per process).
class Redirect {
public:
  Redirect(std::ostream& stream, std::streambuf* buffer)
      : stream_(stream), format_(nullptr), old_(stream.rdbuf(buffer)) {
    format_.copyfmt(stream);
  }
  ~Redirect() {
    stream_.copyfmt(format_);
    stream_.rdbuf(old_);
    stream_.clear();
  }
  Redirect(const Redirect&) = delete;
  Redirect& operator=(const Redirect&) = delete;

private:
  std::ostream& stream_;
  std::ios format_;
  std::streambuf* old_;
};

struct Captured {
  int rc = 0;
  std::string out, err;
  std::exception_ptr error;
};

/// `twinscale ARGS…` in this process, as main() runs it: what it printed, its exit status,
/// or the exception it ended with.
Captured run_cli(const std::vector<std::string>& args) {
  std::lock_guard<std::mutex> lock(run_mutex());
  Captured c;
  std::ostringstream out, err;
  {
    Redirect to_out(std::cout, out.rdbuf());
    Redirect to_err(std::cerr, err.rdbuf());
    try {
      CLI::App app{"twinscale"};
      app.require_subcommand(1);
      cli::Action action;
      cli::add_all_commands(app, action);
      std::vector<const char*> argv{"twinscale"};
      for (const std::string& a : args) argv.push_back(a.c_str());
      const int argc = static_cast<int>(argv.size());
      if (const std::string bad = cli::unknown_subcommand(app, argc, argv.data()); !bad.empty())
        throw UsageProblem(bad);
      try {
        app.parse(argc, argv.data());
        cli::require_finite_numbers(app);
      } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() != 0) throw;
        c.rc = app.exit(e); // --help: the help text on (captured) stdout, exit 0, nothing run
        action = nullptr;
      } catch (const Error&) {
        throw;
      } catch (const std::exception& e) { // an option's value checked while parsing
        throw ParseProblem(e.what());
      }
      c.rc = action ? action() : 0;
    } catch (...) {
      c.error = std::current_exception();
    }
  }
  c.out = out.str();
  c.err = err.str();
  return c;
}

py::bytes as_bytes(const std::string& s) { return {s.data(), s.size()}; }

/// run(args) -> (exit status, stdout bytes, stderr bytes); raises twinscale.errors.*.
py::tuple run(const std::vector<std::string>& args) {
  Captured c;
  {
    py::gil_scoped_release unlocked;
    c = run_cli(args);
  }
  if (c.error) raise_python(classify(c.error));
  return py::make_tuple(c.rc, as_bytes(c.out), as_bytes(c.err));
}

/// The job of a file or preset after --gpus / --global-batch, as the schedule file's
/// "job" object (schedules::job_to_json) — what JobArgs::load() gives every command.
std::string job_json(const std::string& path, const std::string& preset, std::optional<int64_t> gpus,
                     std::optional<int64_t> global_batch) {
  std::exception_ptr error;
  std::string text;
  {
    py::gil_scoped_release unlocked;
    try {
      schedules::JobSpec job = preset.empty() ? config::load_job(path) : config::load_job_preset(preset);
      config::apply_overrides(job, gpus, global_batch);
      text = schedules::job_to_json(job);
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) raise_python(classify(error));
  return text;
}

} // namespace

} // namespace twinscale::python

PYBIND11_MODULE(_twinscale, m) {
  namespace tp = twinscale::python;
  m.doc() = "twinscale's compiled core: the CLI's sub-commands run in-process (use the `twinscale` package)";
  m.def("run", &tp::run, py::arg("args"),
        "Runs `twinscale ARGS...` in this process: (exit status, stdout bytes, stderr bytes); "
        "raises twinscale.errors.* with the CLI's message.");
  m.def("job_json", &tp::job_json, py::arg("path"), py::arg("preset"), py::arg("gpus"), py::arg("global_batch"),
        "The job of a TOML file or a preset (after gpus / global_batch) as JSON text.");
  m.def(
      "preset_names", [](const std::string& kind) { return twinscale::config::preset_names(kind); }, py::arg("kind"),
      "Built-in presets of one kind: jobs, clusters, faults, recovery.");
  m.attr("version") = TWINSCALE_VERSION;
}
