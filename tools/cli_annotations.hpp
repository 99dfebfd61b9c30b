#pragma once
// What people write about an experiment, and waiting for one: det experiment label add|remove,
// set description|name, notes, archive|unarchive, wait.

#include <cstdint>
#include <string>

namespace det::tools {

class rest_client;

int add_label(rest_client& master, std::int64_t id, const std::string& label);
int remove_label(rest_client& master, std::int64_t id, const std::string& label);
/// `field` is "description" or "name".
int set_text(rest_client& master, std::int64_t id, const std::string& field, const std::string& text);
/// Prints the notes; with `from_file` ("-": stdin) replaces them with the file's text first.
int notes(rest_client& master, std::int64_t id, const std::string& from_file);
int archive(rest_client& master, std::int64_t id, bool archived);
/// Waits until the experiment ends; 0 when it COMPLETED, 1 otherwise (its state printed).
int wait_experiment(rest_client& master, std::int64_t id, double interval_s);

} // namespace det::tools
