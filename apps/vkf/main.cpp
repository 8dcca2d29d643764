// vkf: one command line with subcommands. Each subcommand lives in cmd_<name>.cpp; this file
// only wires them up and turns errors into one line and a non-zero exit.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <map>

#include "apps/tool_env/tool_env.h"
#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "engine/error.h"
#include "engine/standard_streams.h"
#include "engine/stop_request.h"

namespace vkf::app {
std::vector<Command>& commands() {
  static std::vector<Command> list;
  return list;
}
}  // namespace vkf::app

int main(int argc, char** argv) {
  // First: anything opened later must not take a closed standard stream's number.
  vkf::open_closed_standard_streams();
  try {
    vkf::tool::configure_cpu_driver();  // before any Vulkan instance: see engine/cpu_driver.h
  } catch (const vkf::Error& e) {
    std::fprintf(stderr, "vkf: error: %s\n", e.what());
    return 1;
  }
  vkf::app::watch_standard_output();
  CLI::App app{"vkformer: train and run the Transformer on any Vulkan device", "vkf"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "vkf 0.1.0");
  std::map<CLI::App*, std::function<int()>> runners;
  for (auto& cmd : vkf::app::commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.description);
    runners[sub] = cmd.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) {
        const int status = run();
        // A command whose output was lost (disk full, /dev/full) must not exit 0.
        vkf::app::finish_standard_output();
        return status;
      }
  } catch (const vkf::StopRequested& e) {
    // Nothing to save in the phase it stopped: say where, exit as shells report the signal.
    std::fprintf(stderr, "vkf: %s\n", e.what());
    return vkf::stop_exit_status();
  } catch (const vkf::Error& e) {
    std::fprintf(stderr, "vkf: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkf: error: %s\n", e.what());
    return 1;
  }
  return 1;
}
