#include "cli/loader_settings_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string_view>
#include <vector>

#include "cli/usage.h"

namespace stoker::cli {
namespace {

// Whether the command offers `setting`: not where the table gives it no help, and --prefetch
// and --verify where `flags` asks.
bool offers(const LoaderSettingsFlags& flags, const LoaderSettingDescription& setting) {
  if (setting.help.empty()) return false;
  if (setting.name == "prefetch") return flags.prefetch;
  if (setting.name == "verify") return flags.verify;
  return true;
}

// "--shuffle-window" of "shuffle_window".
std::string flag_of(std::string_view name) {
  std::string flag = "--" + std::string(name);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// The check of a setting's text, by its forms (LoaderSettingDescription), naming `flag` in its
// UsageError: "--workers: 'x' is not a whole number or auto", "--prefetch must be at most 4096
// (the loader's limit)". `minimum` is the whole numbers' least (the setting's, or the command's).
CLI::Validator text_check(const LoaderSettingDescription& setting, const std::string& flag,
                          int64_t minimum) {
  if (!setting.choices.empty()) return one_of(flag, setting.choices);
  const CLI::Validator number = whole_number(flag, minimum, setting.maximum, "the loader's limit");
  return CLI::Validator(
      [&setting, flag, number](std::string& text) -> std::string {
        if (!setting.word.empty()) {
          if (text == setting.word) return "";
          if (text.empty() || text.find_first_not_of("+-0123456789") != std::string::npos)
            throw UsageError(flag + ": '" + text + "' is not a whole number or " +
                             std::string(setting.word));
        }
        number(text);
        if (!setting.zero_refused.empty() && text == "0")
          throw UsageError(flag + " " + std::string(setting.zero_refused));
        return "";
      },
      "", std::string(setting.name));
}

}  // namespace

void add_loader_settings_options(CLI::App& command, LoaderSettings& settings,
                                 const LoaderSettingsFlags& flags) {
  for (const LoaderSettingDescription& setting : loader_setting_descriptions()) {
    if (!offers(flags, setting)) continue;
    const bool workers = setting.name == "workers";
    const std::string flag = flag_of(setting.name);
    const bool own_help = workers && !flags.workers_help.empty();
    CLI::Option* option =
        command
            .add_option_function<std::string>(
                flag,
                [&settings, &setting](const std::string& text) {
                  throw_if_error(setting.parse(text, settings));
                },
                own_help ? flags.workers_help : std::string(setting.help))
            ->check(text_check(setting, flag, workers && !flags.per_core ? 0 : setting.minimum))
            ->default_str(setting.text(settings));
    if (setting.word.empty() && setting.choices.empty()) option->type_name("INT");
  }
}

std::string workers_text(const WorkerCount& workers) {
  LoaderSettings settings;
  settings.workers = workers;
  return find_loader_setting("workers")->text(settings);
}

}  // namespace stoker::cli
