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
  if (setting.spec.doc.empty()) return false;
  if (setting.spec.name == "prefetch") return flags.prefetch;
  if (setting.spec.name == "verify") return flags.verify;
  return true;
}

// "--shuffle-window" of "shuffle_window".
std::string flag_of(std::string_view name) {
  std::string flag = "--" + std::string(name);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// The check of a setting's text, by its spec (LoaderSettingDescription), naming `flag` in its
// UsageError: "--workers: 'x' is not a whole number or auto", "--prefetch must be at most 4096
// (the loader's limit)". `minimum` is the whole numbers' least (the setting's, or the command's).
CLI::Validator text_check(const LoaderSettingDescription& setting, const std::string& flag,
                          int64_t minimum) {
  const ParamSpec& spec = setting.spec;
  if (spec.type == ParamType::kChoice) return one_of(flag, spec.choices);
  const CLI::Validator number =
      whole_number(flag, minimum, static_cast<uint64_t>(*spec.max), "the loader's limit");
  return CLI::Validator(
      [&setting, flag, number](std::string& text) -> std::string {
        const std::string& word = setting.spec.word;
        if (!word.empty()) {
          if (text == word) return "";
          if (text.empty() || text.find_first_not_of("+-0123456789") != std::string::npos)
            throw UsageError(flag + ": '" + text + "' is not a whole number or " + word);
        }
        number(text);
        if (!setting.zero_refused.empty() && text == "0")
          throw UsageError(flag + " " + std::string(setting.zero_refused));
        return "";
      },
      "", setting.spec.name);
}

}  // namespace

void add_loader_settings_options(CLI::App& command, LoaderSettings& settings,
                                 const LoaderSettingsFlags& flags) {
  for (const LoaderSettingDescription& setting : loader_setting_descriptions()) {
    if (!offers(flags, setting)) continue;
    const bool workers = setting.spec.name == "workers";
    const std::string flag = flag_of(setting.spec.name);
    const bool own_help = workers && !flags.workers_help.empty();
    CLI::Option* option =
        command
            .add_option_function<std::string>(
                flag,
                [&settings, &setting](const std::string& text) {
                  throw_if_error(parse_loader_setting(setting, text, settings));
                },
                own_help ? flags.workers_help : setting.spec.doc)
            ->check(text_check(
                setting, flag,
                workers && !flags.per_core ? 0 : static_cast<int64_t>(*setting.spec.min)))
            ->default_str(setting.text(settings));
    if (setting.spec.type == ParamType::kInt && setting.spec.word.empty()) option->type_name("INT");
  }
}

std::string workers_text(const WorkerCount& workers) {
  LoaderSettings settings;
  settings.workers = workers;
  return find_loader_setting("workers")->text(settings);
}

}  // namespace stoker::cli
