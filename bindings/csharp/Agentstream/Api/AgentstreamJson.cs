using System;

namespace Agentstream
{
    /// <summary>
    /// The JSON form of the wire types (<see cref="OutputEvent"/>, <see cref="AgentEvent"/>,
    /// <see cref="RunResult"/>, …: the keys the library writes, optional properties absent when
    /// null) and of free JSON values, with no JSON library needed. Nesting of any depth is read and
    /// written without recursion.
    /// </summary>
    public static class AgentstreamJson
    {
        /// <summary>
        /// <paramref name="value"/> as compact JSON: a wire type of the schema, or free JSON (null,
        /// string, bool, number, a dictionary with string keys, a list).
        /// </summary>
        public static string Serialize(object value)
        {
            var w = new JsonWriter();
            WireCodec.WriteValue(w, value);
            return w.ToString();
        }

        /// <summary>
        /// Reads <paramref name="json"/> as <typeparamref name="T"/>: a wire type of the schema, or
        /// <c>object</c> for free JSON (objects read as <c>Dictionary&lt;string, object&gt;</c>, arrays as
        /// <c>List&lt;object&gt;</c>, integers as <c>long</c> or <c>ulong</c>, other numbers as
        /// <c>double</c>). Invalid JSON is a <see cref="FormatException"/>.
        /// </summary>
        public static T Deserialize<T>(string json)
        {
            if (json == null)
            {
                throw new NullArgumentException("json must not be null");
            }
            var bytes = System.Text.Encoding.UTF8.GetBytes(json);
            return Read<T>(JsonReader.ForThread(bytes, 0, bytes.Length));
        }

        /// <summary>
        /// <see cref="Deserialize{T}(string)"/> of <paramref name="count"/> bytes of UTF-8 JSON in
        /// <paramref name="utf8"/> from <paramref name="offset"/> (no string is made of the whole text).
        /// </summary>
        public static T Deserialize<T>(byte[] utf8, int offset, int count)
        {
            if (utf8 == null)
            {
                throw new NullArgumentException("utf8 must not be null");
            }
            if (offset < 0 || count < 0 || offset > utf8.Length - count)
            {
                throw new InvalidArgumentException("offset " + offset + " and count " + count + " are outside the " + utf8.Length + " bytes");
            }
            return Read<T>(JsonReader.ForThread(utf8, offset, count));
        }

        static T Read<T>(JsonReader r)
        {
            object value;
            if (!WireCodec.TryRead(typeof(T), r, out value))
            {
                if (typeof(T) != typeof(object))
                {
                    throw new InvalidArgumentException(typeof(T) + " is not a wire type of agentstream: read it as object");
                }
                value = r.ReadAny();
            }
            if (!r.AtEnd())
            {
                throw r.Error("text after the value");
            }
            return (T)value;
        }
    }
}
