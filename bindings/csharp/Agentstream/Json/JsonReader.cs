using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Agentstream
{
    /// <summary>
    /// A pull reader over UTF-8 JSON in a byte array: what the generated codec (<c>WireCodec</c>)
    /// reads every wire type with. Free JSON (<c>object</c>) reads as <c>null</c>, <c>bool</c>,
    /// <c>long</c> (an integer that fits), <c>ulong</c> (a larger non-negative one), <c>double</c>,
    /// <c>string</c>, <c>List&lt;object&gt;</c> or <c>Dictionary&lt;string, object&gt;</c> (keys in
    /// document order).
    ///
    /// Nothing here recurses on the input's nesting: free JSON is built and skipped with an explicit
    /// stack, so a value nested 10^6 levels deep (the core passes tool input through at any depth)
    /// reads without exhausting the thread's stack. Only the generated types recurse, and their
    /// nesting is fixed by the schema.
    ///
    /// Strings without escapes and up to <see cref="InternMaxBytes"/> bytes (keys, kinds, ids that
    /// repeat on every event) come from a small per-reader cache instead of a new allocation.
    /// </summary>
    internal sealed class JsonReader
    {
        /// <summary>Longest string (in UTF-8 bytes) the reader hands out from its cache.</summary>
        internal const int InternMaxBytes = 48;

        const int CacheSize = 1024; // a power of two

        byte[] b;
        int pos;
        int end;
        string[] cacheStrings; // allocated on first use
        byte[][] cacheBytes;
        char[] chars = new char[256];
        Frame[] frames = new Frame[16];

        /// <summary>A reader of <paramref name="count"/> bytes of <paramref name="buffer"/> from <paramref name="offset"/>.</summary>
        internal JsonReader(byte[] buffer, int offset, int count)
        {
            Reset(buffer, offset, count);
        }

        [ThreadStatic]
        static JsonReader threadReader;

        /// <summary>The schema's strings, each mapped to its literal instance (see <see cref="Canonical"/>).</summary>
        static readonly Dictionary<string, string> Known = BuildKnown();

        static Dictionary<string, string> BuildKnown()
        {
            var known = new Dictionary<string, string>(StringComparer.Ordinal);
            foreach (var s in WireCodec.Strings)
            {
                known[s] = s;
            }
            return known;
        }

        /// <summary>
        /// The literal instance of a string of the schema (a key, a tag, an enum value), else the string
        /// itself: the generated readers compare keys by reference, which is exact for these.
        /// </summary>
        internal static string Canonical(string s)
        {
            string literal;
            return s != null && Known.TryGetValue(s, out literal) ? literal : s;
        }

        // Whether the last string read came through the cache (and so is canonical already).
        bool lastCached;

        /// <summary>
        /// This thread's reader, reset to the given bytes: readers are reused (their string cache
        /// stays warm) by everything that parses a whole text before any user code runs.
        /// </summary>
        internal static JsonReader ForThread(byte[] buffer, int offset, int count)
        {
            var r = threadReader;
            if (r == null)
            {
                r = threadReader = new JsonReader(buffer, offset, count);
            }
            else
            {
                r.Reset(buffer, offset, count);
            }
            return r;
        }

        /// <summary>Reads another buffer, keeping the cache.</summary>
        internal void Reset(byte[] buffer, int offset, int count)
        {
            b = buffer;
            pos = offset;
            end = offset + count;
        }

        /// <summary>The position of the next byte (to come back to a value later).</summary>
        internal int Position
        {
            get { return pos; }
            set { pos = value; }
        }

        /// <summary>A parse error at the current position.</summary>
        internal FormatException Error(string what)
        {
            return new FormatException("agentstream: invalid JSON at byte " + pos + ": " + what);
        }

        // The hot paths copy the buffer and position into locals: mono's JIT does not keep fields in
        // registers, and these loops run once per input byte.

        void SkipWs()
        {
            var buf = b;
            int i = pos;
            int n = end;
            while (i < n)
            {
                byte c = buf[i];
                if (c != (byte)' ' && c != (byte)'\n' && c != (byte)'\r' && c != (byte)'\t')
                {
                    break;
                }
                i++;
            }
            pos = i;
        }

        /// <summary>The next byte that is not whitespace (the reader moves to it).</summary>
        byte PeekByte()
        {
            int i = pos;
            if (i < end)
            {
                byte c = b[i];
                if (c > (byte)' ')
                {
                    return c; // compact JSON: no whitespace to skip
                }
            }
            SkipWs();
            if (pos >= end)
            {
                throw Error("unexpected end of input");
            }
            return b[pos];
        }

        void Expect(byte c)
        {
            if (PeekByte() != c)
            {
                throw Error("expected '" + (char)c + "', found '" + (char)b[pos] + "'");
            }
            pos++;
        }

        /// <summary>Whether only whitespace is left.</summary>
        internal bool AtEnd()
        {
            SkipWs();
            return pos >= end;
        }

        /// <summary>Consumes a <c>null</c> and returns true, or returns false before any other value.</summary>
        internal bool TryReadNull()
        {
            if (PeekByte() != (byte)'n')
            {
                return false;
            }
            Literal("null");
            return true;
        }

        void Literal(string word)
        {
            if (end - pos < word.Length)
            {
                throw Error("expected " + word);
            }
            for (int i = 0; i < word.Length; i++)
            {
                if (b[pos + i] != (byte)word[i])
                {
                    throw Error("expected " + word);
                }
            }
            pos += word.Length;
        }

        /// <summary>Consumes the <c>{</c> of an object.</summary>
        internal void BeginObject()
        {
            Expect((byte)'{');
        }

        /// <summary>
        /// The next key of the object being read (its value comes next), or false after its <c>}</c>.
        /// Works right after <see cref="BeginObject"/> and after each value. (Lenient about the
        /// commas between members: the input is the library's own output.)
        /// </summary>
        internal bool NextKey(out string key)
        {
            byte c = PeekByte();
            if (c == (byte)'}')
            {
                pos++;
                key = null;
                return false;
            }
            if (c == (byte)',')
            {
                pos++;
                c = PeekByte();
            }
            if (c != (byte)'"')
            {
                throw Error("expected a key");
            }
            pos++;
            key = StringBody();
            if (!lastCached)
            {
                key = Canonical(key);
            }
            Expect((byte)':');
            return true;
        }

        /// <summary>
        /// The string value of <paramref name="key"/> in the object being read, the reader right after
        /// its <c>{</c>. When it is the first key, the reader moves past its value; otherwise the object
        /// is searched and the reader stays where it was (the key is then skipped as an unknown one).
        /// Null when the object has no such string.
        /// </summary>
        internal string ReadTag(string key)
        {
            int start = pos;
            string k;
            if (NextKey(out k))
            {
                if (k == key && PeekByte() == (byte)'"')
                {
                    return ReadString();
                }
                Skip();
                while (NextKey(out k))
                {
                    if (k == key && PeekByte() == (byte)'"')
                    {
                        string value = ReadString();
                        pos = start;
                        return value;
                    }
                    Skip();
                }
            }
            pos = start;
            return null;
        }

        /// <summary>Consumes a string (null for a JSON <c>null</c>).</summary>
        internal string ReadString()
        {
            byte c = PeekByte();
            if (c == (byte)'"')
            {
                pos++;
                return StringBody();
            }
            if (c == (byte)'n')
            {
                Literal("null");
                return null;
            }
            throw Error("expected a string");
        }

        /// <summary>The rest of a string after its opening quote.</summary>
        string StringBody()
        {
            var buf = b;
            int start = pos;
            int i = start;
            int n = end;
            while (i < n)
            {
                byte c = buf[i];
                if (c == (byte)'"')
                {
                    pos = i + 1;
                    return Plain(start, i - start);
                }
                if (c == (byte)'\\')
                {
                    return Escaped(start, i);
                }
                i++;
            }
            throw Error("unterminated string");
        }

        string Plain(int start, int len)
        {
            lastCached = true;
            if (len == 0)
            {
                return string.Empty;
            }
            if (len > InternMaxBytes)
            {
                lastCached = false;
                return Encoding.UTF8.GetString(b, start, len);
            }
            if (cacheStrings == null)
            {
                cacheStrings = new string[CacheSize];
                cacheBytes = new byte[CacheSize][];
            }
            var buf = b;
            uint h = 2166136261;
            for (int i = start, stop = start + len; i < stop; i++)
            {
                h = (h ^ buf[i]) * 16777619;
            }
            int slot = (int)(h & (CacheSize - 1));
            byte[] cached = cacheBytes[slot];
            if (cached != null && cached.Length == len)
            {
                int i = 0;
                while (i < len && cached[i] == buf[start + i])
                {
                    i++;
                }
                if (i == len)
                {
                    return cacheStrings[slot];
                }
            }
            string s = Canonical(Encoding.UTF8.GetString(b, start, len));
            var copy = new byte[len];
            Buffer.BlockCopy(b, start, copy, 0, len);
            cacheBytes[slot] = copy;
            cacheStrings[slot] = s;
            return s;
        }

        /// <summary>A string with escapes: <paramref name="escape"/> is the first backslash.</summary>
        string Escaped(int start, int escape)
        {
            lastCached = false;
            var sb = new StringBuilder();
            int runStart = start;
            int i = escape;
            while (true)
            {
                if (i >= end)
                {
                    throw Error("unterminated string");
                }
                byte c = b[i];
                if (c == (byte)'"')
                {
                    AppendUtf8(sb, runStart, i - runStart);
                    pos = i + 1;
                    return sb.ToString();
                }
                if (c != (byte)'\\')
                {
                    i++;
                    continue;
                }
                AppendUtf8(sb, runStart, i - runStart);
                if (i + 1 >= end)
                {
                    throw Error("unterminated escape");
                }
                byte e = b[i + 1];
                i += 2;
                switch (e)
                {
                    case (byte)'"': sb.Append('"'); break;
                    case (byte)'\\': sb.Append('\\'); break;
                    case (byte)'/': sb.Append('/'); break;
                    case (byte)'b': sb.Append('\b'); break;
                    case (byte)'f': sb.Append('\f'); break;
                    case (byte)'n': sb.Append('\n'); break;
                    case (byte)'r': sb.Append('\r'); break;
                    case (byte)'t': sb.Append('\t'); break;
                    case (byte)'u':
                        if (i + 4 > end)
                        {
                            throw Error("short \\u escape");
                        }
                        int code = 0;
                        for (int k = 0; k < 4; k++)
                        {
                            int d = Hex(b[i + k]);
                            if (d < 0)
                            {
                                throw Error("bad \\u escape");
                            }
                            code = code * 16 + d;
                        }
                        // Lone surrogates are kept as they are (a .NET string can hold them).
                        sb.Append((char)code);
                        i += 4;
                        break;
                    default:
                        throw Error("bad escape \\" + (char)e);
                }
                runStart = i;
            }
        }

        void AppendUtf8(StringBuilder sb, int start, int len)
        {
            if (len == 0)
            {
                return;
            }
            if (chars.Length < len)
            {
                chars = new char[Math.Max(len, chars.Length * 2)];
            }
            int n = Encoding.UTF8.GetChars(b, start, len, chars, 0);
            sb.Append(chars, 0, n);
        }

        static int Hex(byte c)
        {
            if (c >= (byte)'0' && c <= (byte)'9') return c - '0';
            if (c >= (byte)'a' && c <= (byte)'f') return c - 'a' + 10;
            if (c >= (byte)'A' && c <= (byte)'F') return c - 'A' + 10;
            return -1;
        }

        /// <summary>Consumes <c>true</c> or <c>false</c>.</summary>
        internal bool ReadBool()
        {
            byte c = PeekByte();
            if (c == (byte)'t')
            {
                Literal("true");
                return true;
            }
            if (c == (byte)'f')
            {
                Literal("false");
                return false;
            }
            throw Error("expected true or false");
        }

        /// <summary>Consumes a non-negative integer.</summary>
        internal ulong ReadUInt64()
        {
            PeekByte();
            int start = pos;
            ulong v = 0;
            while (pos < end)
            {
                int d = b[pos] - '0';
                if (d < 0 || d > 9)
                {
                    break;
                }
                ulong next = v * 10 + (ulong)d;
                if (v > ulong.MaxValue / 10 || next < v * 10)
                {
                    throw Error("integer out of range");
                }
                v = next;
                pos++;
            }
            if (pos == start || (pos < end && IsNumberTail(b[pos])))
            {
                pos = start;
                throw Error("expected a non-negative integer");
            }
            return v;
        }

        /// <summary>Consumes an integer.</summary>
        internal long ReadInt64()
        {
            bool negative = PeekByte() == (byte)'-';
            if (negative)
            {
                pos++;
            }
            ulong magnitude = ReadUInt64();
            if (negative)
            {
                if (magnitude > (ulong)long.MaxValue + 1)
                {
                    throw Error("integer out of range");
                }
                return magnitude == (ulong)long.MaxValue + 1 ? long.MinValue : -(long)magnitude;
            }
            if (magnitude > long.MaxValue)
            {
                throw Error("integer out of range");
            }
            return (long)magnitude;
        }

        /// <summary>Consumes a 32-bit integer.</summary>
        internal int ReadInt32()
        {
            long v = ReadInt64();
            if (v < int.MinValue || v > int.MaxValue)
            {
                throw Error("integer out of range");
            }
            return (int)v;
        }

        static bool IsNumberTail(byte c)
        {
            return c == (byte)'.' || c == (byte)'e' || c == (byte)'E';
        }

        /// <summary>Consumes a number.</summary>
        internal double ReadDouble()
        {
            PeekByte();
            int start = pos;
            while (pos < end && IsNumberByte(b[pos]))
            {
                pos++;
            }
            if (pos == start)
            {
                throw Error("expected a number");
            }
            double v;
            string text = Encoding.ASCII.GetString(b, start, pos - start);
            if (!double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out v))
            {
                pos = start;
                throw Error("bad number " + text);
            }
            return v;
        }

        static bool IsNumberByte(byte c)
        {
            return (c >= (byte)'0' && c <= (byte)'9') || c == (byte)'-' || c == (byte)'+' || c == (byte)'.' ||
                c == (byte)'e' || c == (byte)'E';
        }

        /// <summary>A number of free JSON: long when it fits, ulong for a larger integer, else double.</summary>
        object ReadNumber()
        {
            int start = pos;
            bool negative = b[pos] == (byte)'-';
            int digits = negative ? pos + 1 : pos;
            int i = digits;
            while (i < end && b[i] >= (byte)'0' && b[i] <= (byte)'9')
            {
                i++;
            }
            bool integral = i > digits && (i >= end || !IsNumberByte(b[i]));
            // Up to 18 digits always fit a long; longer ones are checked by the readers.
            if (integral && i - digits <= 18)
            {
                long v = 0;
                for (int k = digits; k < i; k++)
                {
                    v = v * 10 + (b[k] - '0');
                }
                pos = i;
                return negative ? -v : v;
            }
            if (integral && i - digits <= 20)
            {
                pos = digits;
                ulong u = 0;
                bool fits = true;
                for (int k = digits; k < i; k++)
                {
                    ulong next = u * 10 + (ulong)(b[k] - '0');
                    if (u > ulong.MaxValue / 10 || next < u * 10)
                    {
                        fits = false;
                        break;
                    }
                    u = next;
                }
                if (fits && !negative)
                {
                    pos = i;
                    return u <= long.MaxValue ? (object)(long)u : u;
                }
                if (fits && u <= (ulong)long.MaxValue + 1)
                {
                    pos = i;
                    return u == (ulong)long.MaxValue + 1 ? long.MinValue : -(long)u;
                }
            }
            pos = start;
            return ReadDouble();
        }

        /// <summary>Consumes the <c>[</c> of an array.</summary>
        internal void BeginArray()
        {
            Expect((byte)'[');
        }

        /// <summary>
        /// Whether another element of the array being read follows (the reader is then on it), or
        /// false after its <c>]</c>. Works right after <see cref="BeginArray"/> and after each element.
        /// </summary>
        internal bool NextElement()
        {
            byte c = PeekByte();
            if (c == (byte)']')
            {
                pos++;
                return false;
            }
            if (c == (byte)',')
            {
                pos++;
            }
            return true;
        }

        /// <summary>Consumes a list of items read by <paramref name="item"/> (null for a JSON <c>null</c>).</summary>
        internal List<T> ReadList<T>(Func<JsonReader, T> item)
        {
            if (TryReadNull())
            {
                return null;
            }
            Expect((byte)'[');
            var list = new List<T>();
            if (PeekByte() == (byte)']')
            {
                pos++;
                return list;
            }
            while (true)
            {
                list.Add(item(this));
                byte c = PeekByte();
                pos++;
                if (c == (byte)']')
                {
                    return list;
                }
                if (c != (byte)',')
                {
                    pos--;
                    throw Error("expected ',' or ']'");
                }
            }
        }

        /// <summary>Consumes an object whose values are read by <paramref name="value"/> (null for a JSON <c>null</c>).</summary>
        internal Dictionary<string, T> ReadMap<T>(Func<JsonReader, T> value)
        {
            if (TryReadNull())
            {
                return null;
            }
            BeginObject();
            var map = new Dictionary<string, T>();
            string k;
            while (NextKey(out k))
            {
                map[k] = value(this);
            }
            return map;
        }

        /// <summary>
        /// Consumes a free JSON value for a lazy property: an object or array is kept as its text
        /// (a <see cref="RawJson"/>, built on first read); a scalar is read at once.
        /// </summary>
        internal object ReadLazy()
        {
            byte c = PeekByte();
            if (c != (byte)'{' && c != (byte)'[')
            {
                return Scalar();
            }
            int start = pos;
            Skip();
            return new RawJson(b, start, pos - start);
        }

        /// <summary><see cref="ReadLazy"/> of a value that must be an object (or null).</summary>
        internal object ReadLazyObject()
        {
            byte c = PeekByte();
            if (c == (byte)'n')
            {
                Literal("null");
                return null;
            }
            if (c != (byte)'{')
            {
                throw Error("expected an object");
            }
            return ReadLazy();
        }

        /// <summary>Consumes an object of free JSON (null for a JSON <c>null</c>).</summary>
        internal IDictionary<string, object> ReadObject()
        {
            if (TryReadNull())
            {
                return null;
            }
            if (PeekByte() != (byte)'{')
            {
                throw Error("expected an object");
            }
            return (IDictionary<string, object>)ReadAny();
        }

        /// <summary>
        /// The rest of an object whose <c>{</c> was consumed, as free JSON, without the key
        /// <paramref name="skipKey"/>.
        /// </summary>
        internal IDictionary<string, object> ReadObjectBody(string skipKey)
        {
            var map = new Dictionary<string, object>();
            string k;
            while (NextKey(out k))
            {
                object v = ReadAny();
                if (k != skipKey)
                {
                    map[k] = v;
                }
            }
            return map;
        }

        struct Frame
        {
            internal Dictionary<string, object> Map;
            internal List<object> List;
            internal string Key;
            internal bool First;
        }

        object Scalar()
        {
            byte c = PeekByte();
            switch (c)
            {
                case (byte)'"':
                    pos++;
                    return StringBody();
                case (byte)'t':
                case (byte)'f':
                    return ReadBool();
                case (byte)'n':
                    Literal("null");
                    return null;
                default:
                    if (c == (byte)'-' || (c >= (byte)'0' && c <= (byte)'9'))
                    {
                        return ReadNumber();
                    }
                    throw Error("unexpected '" + (char)c + "'");
            }
        }

        /// <summary>Consumes any value as free JSON, at any depth (an explicit stack, no recursion).</summary>
        internal object ReadAny()
        {
            byte c = PeekByte();
            if (c != (byte)'{' && c != (byte)'[')
            {
                return Scalar();
            }
            int depth = 0;
            object root = Open(ref depth);
            try
            {
                ReadContainers(ref depth);
            }
            finally
            {
                if (frames.Length > 4096)
                {
                    frames = new Frame[16]; // do not keep a huge stack after a deep value
                }
            }
            return root;
        }

        /// <summary>Fills the containers opened on the frame stack until it is empty.</summary>
        void ReadContainers(ref int depth)
        {
            byte c;
            while (depth > 0)
            {
                int top = depth - 1;
                c = PeekByte();
                if (frames[top].Map != null)
                {
                    if (c == (byte)'}')
                    {
                        pos++;
                        frames[top] = default(Frame);
                        depth--;
                        continue;
                    }
                    if (!frames[top].First)
                    {
                        if (c != (byte)',')
                        {
                            throw Error("expected ',' or '}'");
                        }
                        pos++;
                        c = PeekByte();
                    }
                    frames[top].First = false;
                    if (c != (byte)'"')
                    {
                        throw Error("expected a key");
                    }
                    pos++;
                    frames[top].Key = StringBody();
                    Expect((byte)':');
                }
                else
                {
                    if (c == (byte)']')
                    {
                        pos++;
                        frames[top] = default(Frame);
                        depth--;
                        continue;
                    }
                    if (!frames[top].First)
                    {
                        if (c != (byte)',')
                        {
                            throw Error("expected ',' or ']'");
                        }
                        pos++;
                    }
                    frames[top].First = false;
                }
                c = PeekByte();
                object value;
                if (c == (byte)'{' || c == (byte)'[')
                {
                    value = Open(ref depth);
                }
                else
                {
                    value = Scalar();
                }
                if (frames[top].Map != null)
                {
                    frames[top].Map[frames[top].Key] = value;
                }
                else
                {
                    frames[top].List.Add(value);
                }
            }
        }

        /// <summary>Opens the container at the reader (pushes its frame) and returns it.</summary>
        object Open(ref int depth)
        {
            if (depth == frames.Length)
            {
                Array.Resize(ref frames, frames.Length * 2);
            }
            byte c = b[pos++];
            var f = new Frame { First = true };
            object container;
            if (c == (byte)'{')
            {
                f.Map = new Dictionary<string, object>();
                container = f.Map;
            }
            else
            {
                f.List = new List<object>();
                container = f.List;
            }
            frames[depth++] = f;
            return container;
        }

        /// <summary>Consumes one value of any kind and depth without building it (an unknown key's value).</summary>
        internal void Skip()
        {
            byte c = PeekByte();
            if (c != (byte)'{' && c != (byte)'[')
            {
                if (c == (byte)'"')
                {
                    pos++;
                    SkipStringBody();
                    return;
                }
                Scalar();
                return;
            }
            var buf = b;
            int i = pos;
            int n = end;
            int depth = 0;
            while (i < n)
            {
                c = buf[i++];
                if (c == (byte)'"')
                {
                    while (true)
                    {
                        if (i >= n)
                        {
                            pos = i;
                            throw Error("unterminated string");
                        }
                        byte s = buf[i++];
                        if (s == (byte)'"')
                        {
                            break;
                        }
                        if (s == (byte)'\\')
                        {
                            i++;
                        }
                    }
                }
                else if (c == (byte)'{' || c == (byte)'[')
                {
                    depth++;
                }
                else if (c == (byte)'}' || c == (byte)']')
                {
                    depth--;
                    if (depth == 0)
                    {
                        pos = i;
                        return;
                    }
                }
            }
            pos = i;
            throw Error("unterminated value");
        }

        void SkipStringBody()
        {
            var buf = b;
            int i = pos;
            int n = end;
            while (i < n)
            {
                byte c = buf[i++];
                if (c == (byte)'\\')
                {
                    i++;
                }
                else if (c == (byte)'"')
                {
                    pos = i;
                    return;
                }
            }
            pos = i;
            throw Error("unterminated string");
        }
    }
}
