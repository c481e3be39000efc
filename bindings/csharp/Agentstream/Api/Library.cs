using Agentstream.Interop;

namespace Agentstream
{
    /// <summary>Facts about the loaded native library.</summary>
    public static class Library
    {
        /// <summary>The version of the loaded <c>libagentstream</c> ("0.1.0").</summary>
        public static string Version
        {
            get { return Native.StaticString(Native.agentstream_version()); }
        }

        /// <summary>
        /// Checks a channel name with the rule of <see cref="Evolve.On"/>: nothing for "content",
        /// "lifecycle", "stdout" and "stderr"; otherwise an <see cref="InvalidArgumentException"/> whose
        /// message lists the four.
        /// </summary>
        public static void ValidateChannel(string name)
        {
            Native.Check(Native.agentstream_channel_validate(Native.Utf8(name)));
        }
    }
}
