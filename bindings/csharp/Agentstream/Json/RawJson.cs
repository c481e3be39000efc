using System;
using System.Text;

namespace Agentstream
{
    /// <summary>
    /// A free JSON value kept as its UTF-8 text until a lazy property is first read (see the
    /// generated <c>LazyValue</c>): then built, without recursion, like any free JSON.
    /// </summary>
    internal sealed class RawJson : LazyValue
    {
        readonly byte[] utf8;

        /// <summary>A copy of <paramref name="count"/> bytes of <paramref name="source"/> from <paramref name="offset"/> (the source buffer is reused).</summary>
        internal RawJson(byte[] source, int offset, int count)
        {
            utf8 = new byte[count];
            Buffer.BlockCopy(source, offset, utf8, 0, count);
        }

        internal override object Materialize()
        {
            // A reader of its own: this runs in user code, possibly while the thread's reader is in use.
            return new JsonReader(utf8, 0, utf8.Length).ReadAny();
        }

        /// <summary>Writes the text as it was read.</summary>
        internal void WriteTo(JsonWriter w)
        {
            w.Raw(Encoding.UTF8.GetString(utf8));
        }
    }
}
