#pragma once
// Subcommands register themselves here (one cmd_<name>.cpp each), so main.cpp is wiring only.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace vkf::app {

struct Command {
  std::string name;
  // Adds the subcommand's options to `sub` and returns the function that runs it (exit code).
  std::function<std::function<int()>(CLI::App& sub)> setup;
  std::string description;
};

std::vector<Command>& commands();

struct RegisterCommand {
  RegisterCommand(std::string name, std::string description,
                  std::function<std::function<int()>(CLI::App&)> setup) {
    commands().push_back({std::move(name), std::move(setup), std::move(description)});
  }
};

}  // namespace vkf::app
