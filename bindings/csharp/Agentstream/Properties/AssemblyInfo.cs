using System.Reflection;

// The package version: the Cargo workspace's (a test checks it equals the native library's).
[assembly: AssemblyTitle("Agentstream")]
[assembly: AssemblyDescription("Typed, ordered, bounded event streams from coding-agent CLIs (C# over libagentstream).")]
[assembly: AssemblyVersion("0.1.0")]
[assembly: AssemblyFileVersion("0.1.0")]
[assembly: AssemblyInformationalVersion("0.1.0")]
