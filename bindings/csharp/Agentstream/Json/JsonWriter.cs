using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Agentstream
{
    /// <summary>
    /// A compact JSON writer: what the generated codec (<c>WireCodec</c>) writes every wire type with,
    /// and how run requests and configurations reach the library. Free JSON (<see cref="Any"/>) is
    /// written with an explicit stack, so a value nested 10^6 levels deep writes without exhausting
    /// the thread's stack.
    /// </summary>
    internal sealed class JsonWriter
    {
        readonly StringBuilder sb;
        // first[d]: no member written yet at depth d (depth 0 is the top level).
        bool[] first = new bool[16];
        int depth;
        bool afterKey;

        /// <summary>A writer into a new buffer.</summary>
        internal JsonWriter()
        {
            sb = new StringBuilder();
            first[0] = true;
        }

        /// <summary>The JSON written so far.</summary>
        public override string ToString()
        {
            return sb.ToString();
        }

        void BeforeValue()
        {
            if (afterKey)
            {
                afterKey = false;
                return;
            }
            if (!first[depth])
            {
                sb.Append(',');
            }
            first[depth] = false;
        }

        void Push()
        {
            depth++;
            if (depth == first.Length)
            {
                Array.Resize(ref first, first.Length * 2);
            }
            first[depth] = true;
        }

        internal void BeginObject()
        {
            BeforeValue();
            sb.Append('{');
            Push();
        }

        internal void EndObject()
        {
            sb.Append('}');
            depth--;
        }

        internal void BeginArray()
        {
            BeforeValue();
            sb.Append('[');
            Push();
        }

        internal void EndArray()
        {
            sb.Append(']');
            depth--;
        }

        /// <summary>A member's key; its value comes next.</summary>
        internal void Key(string key)
        {
            if (!first[depth])
            {
                sb.Append(',');
            }
            first[depth] = false;
            AppendQuoted(sb, key);
            sb.Append(':');
            afterKey = true;
        }

        internal void Null()
        {
            BeforeValue();
            sb.Append("null");
        }

        /// <summary>A value given as its JSON text (written as it is).</summary>
        internal void Raw(string json)
        {
            BeforeValue();
            sb.Append(json);
        }

        /// <summary>A string, or <c>null</c>.</summary>
        internal void String(string s)
        {
            if (s == null)
            {
                Null();
                return;
            }
            BeforeValue();
            AppendQuoted(sb, s);
        }

        internal void Bool(bool v)
        {
            BeforeValue();
            sb.Append(v ? "true" : "false");
        }

        internal void Number(ulong v)
        {
            BeforeValue();
            sb.Append(v.ToString(CultureInfo.InvariantCulture));
        }

        internal void Number(long v)
        {
            BeforeValue();
            sb.Append(v.ToString(CultureInfo.InvariantCulture));
        }

        internal void Number(int v)
        {
            BeforeValue();
            sb.Append(v.ToString(CultureInfo.InvariantCulture));
        }

        /// <summary>A finite number (NaN and infinities have no JSON form: an ArgumentException).</summary>
        internal void Number(double v)
        {
            if (double.IsNaN(v) || double.IsInfinity(v))
            {
                throw new ArgumentException("JSON has no number " + v.ToString(CultureInfo.InvariantCulture));
            }
            BeforeValue();
            sb.Append(v.ToString("R", CultureInfo.InvariantCulture));
        }

        /// <summary>A JSON string literal of <paramref name="s"/>.</summary>
        internal static string Quote(string s)
        {
            if (s == null)
            {
                return "null";
            }
            var sb = new StringBuilder(s.Length + 2);
            AppendQuoted(sb, s);
            return sb.ToString();
        }

        static void AppendQuoted(StringBuilder sb, string s)
        {
            sb.Append('"');
            int run = 0;
            for (int i = 0; i < s.Length; i++)
            {
                char c = s[i];
                string escape = null;
                if (c == '"')
                {
                    escape = "\\\"";
                }
                else if (c == '\\')
                {
                    escape = "\\\\";
                }
                else if (c < 0x20)
                {
                    switch (c)
                    {
                        case '\n': escape = "\\n"; break;
                        case '\r': escape = "\\r"; break;
                        case '\t': escape = "\\t"; break;
                        case '\b': escape = "\\b"; break;
                        case '\f': escape = "\\f"; break;
                        default: escape = "\\u" + ((int)c).ToString("x4", CultureInfo.InvariantCulture); break;
                    }
                }
                else if (char.IsSurrogate(c))
                {
                    bool paired = char.IsHighSurrogate(c) && i + 1 < s.Length && char.IsLowSurrogate(s[i + 1]);
                    if (paired)
                    {
                        i++;
                        continue;
                    }
                    // A lone surrogate has no UTF-8 form: keep it as an escape, as it was read.
                    escape = "\\u" + ((int)c).ToString("x4", CultureInfo.InvariantCulture);
                }
                if (escape != null)
                {
                    sb.Append(s, run, i - run);
                    sb.Append(escape);
                    run = i + 1;
                }
            }
            sb.Append(s, run, s.Length - run);
            sb.Append('"');
        }

        struct Frame
        {
            internal IEnumerator Items; // a list, or an IDictionary's entries
            internal IEnumerator<KeyValuePair<string, object>> Members; // an IDictionary<string, object>'s
            internal int Kind; // 0 list, 1 IDictionary<string, object>, 2 IDictionary
        }

        /// <summary>
        /// Free JSON: null, a string, a bool, a number, a dictionary (string keys), a list or any
        /// other <see cref="IEnumerable"/>, a wire type of the schema, at any depth.
        /// </summary>
        internal void Any(object value)
        {
            if (!Opens(value))
            {
                Scalar(value);
                return;
            }
            var stack = new List<Frame>();
            stack.Add(Open(value));
            while (stack.Count > 0)
            {
                int top = stack.Count - 1;
                Frame f = stack[top];
                if (!(f.Kind == 1 ? f.Members.MoveNext() : f.Items.MoveNext()))
                {
                    if (f.Kind == 0)
                    {
                        EndArray();
                    }
                    else
                    {
                        EndObject();
                    }
                    stack.RemoveAt(top);
                    continue;
                }
                object item;
                if (f.Kind == 1)
                {
                    var kv = f.Members.Current;
                    Key(kv.Key);
                    item = kv.Value;
                }
                else if (f.Kind == 2)
                {
                    var entry = ((IDictionaryEnumerator)f.Items).Entry;
                    Key(Convert.ToString(entry.Key, CultureInfo.InvariantCulture));
                    item = entry.Value;
                }
                else
                {
                    item = f.Items.Current;
                }
                if (Opens(item))
                {
                    stack.Add(Open(item));
                }
                else
                {
                    Scalar(item);
                }
            }
        }

        static bool Opens(object value)
        {
            return value is IEnumerable && !(value is string);
        }

        Frame Open(object value)
        {
            var generic = value as IDictionary<string, object>;
            if (generic != null)
            {
                BeginObject();
                return new Frame { Members = generic.GetEnumerator(), Kind = 1 };
            }
            var dictionary = value as IDictionary;
            if (dictionary != null)
            {
                BeginObject();
                return new Frame { Items = dictionary.GetEnumerator(), Kind = 2 };
            }
            BeginArray();
            return new Frame { Items = ((IEnumerable)value).GetEnumerator(), Kind = 0 };
        }

        void Scalar(object value)
        {
            if (value == null)
            {
                Null();
                return;
            }
            if (value is Enum)
            {
                // A generated enum writes its wire string; another enum has no agreed form.
                if (!WireCodec.TryWrite(this, value))
                {
                    throw new ArgumentException("agentstream: a " + value.GetType() + " has no JSON form");
                }
                return;
            }
            switch (Type.GetTypeCode(value.GetType()))
            {
                case TypeCode.String: String((string)value); return;
                case TypeCode.Char: String(value.ToString()); return;
                case TypeCode.Boolean: Bool((bool)value); return;
                case TypeCode.SByte:
                case TypeCode.Int16:
                case TypeCode.Int32:
                case TypeCode.Int64:
                    Number(Convert.ToInt64(value, CultureInfo.InvariantCulture));
                    return;
                case TypeCode.Byte:
                case TypeCode.UInt16:
                case TypeCode.UInt32:
                case TypeCode.UInt64:
                    Number(Convert.ToUInt64(value, CultureInfo.InvariantCulture));
                    return;
                case TypeCode.Single:
                case TypeCode.Double:
                    Number(Convert.ToDouble(value, CultureInfo.InvariantCulture));
                    return;
                case TypeCode.Decimal:
                    BeforeValue();
                    sb.Append(((decimal)value).ToString(CultureInfo.InvariantCulture));
                    return;
            }
            if (!WireCodec.TryWrite(this, value))
            {
                throw new ArgumentException("agentstream: a " + value.GetType() + " has no JSON form");
            }
        }
    }
}
