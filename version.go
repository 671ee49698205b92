package coordination

// Version is the library's release, following semantic versioning; see
// CHANGELOG.md. Workers export it as the version label of the
// coordination_build_info metric.
const Version = "0.1.0"
