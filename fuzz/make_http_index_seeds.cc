// Writes the http index fuzz target's seed corpus into a directory: index pages of the folder
// http://127.0.0.1:8080/data/tars/ as nginx (HTML and JSON), Apache and Python's http.server
// write them.
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: http_index_fuzz_seeds DIR\n";
    return 2;
  }
  const char* const pages[] = {
      R"(<html>
<head><title>Index of /data/tars/</title></head>
<body>
<h1>Index of /data/tars/</h1><hr><pre><a href="../">../</a>
<a href="sub/">sub/</a>                                               26-Nov-2026 07:00       -
<a href="./a:b.tar">a:b.tar</a>                                       26-Nov-2026 07:00   10240
<a href="d-0.tar">d-0.tar</a>                                         26-Nov-2026 07:00   10240
<a href="with%20space.tar">with space.tar</a>                         26-Nov-2026 07:00   10240
</pre><hr></body>
</html>
)",
      R"([
{ "name":"sub", "type":"directory", "mtime":"Thu, 26 Nov 2026 07:00:00 GMT" },
{ "name":"d-0.tar", "type":"file", "mtime":"Thu, 26 Nov 2026 07:00:00 GMT", "size":10240 },
{ "name":"with space.tar", "type":"file", "mtime":"Thu, 26 Nov 2026 07:00:00 GMT", "size":1 }
]
)",
      R"(<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN">
<html>
 <head>
  <title>Index of /data/tars</title>
 </head>
 <body>
<h1>Index of /data/tars</h1>
  <table>
   <tr><th valign="top"><img src="/icons/blank.gif" alt="[ICO]"></th><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th></tr>
   <tr><th colspan="5"><hr></th></tr>
<tr><td valign="top"><img src="/icons/back.gif" alt="[PARENTDIR]"></td><td><a href="/data/">Parent Directory</a></td></tr>
<tr><td valign="top"><img src="/icons/unknown.gif" alt="[   ]"></td><td><a href="d-0.tar">d-0.tar</a></td><td align="right">2026-11-26 07:00  </td></tr>
<tr><td valign="top"><img src="/icons/folder.gif" alt="[DIR]"></td><td><a href="sub/">sub/</a></td></tr>
   <tr><th colspan="5"><hr></th></tr>
</table>
<address>Apache Server at 127.0.0.1 Port 8080</address>
</body></html>
)",
      R"(<!DOCTYPE HTML>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Directory listing for /data/tars/</title>
<style>a { color: red }</style><script>if (a<b) x();</script>
</head>
<body>
<h1>Directory listing for /data/tars/</h1>
<hr>
<ul>
<li><a href="d-0.tar">d-0.tar</a></li>
<li><a href="amp%26.tar">amp&amp;.tar</a></li>
<li><a href="http://127.0.0.1:8080/data/tars/full.tar">full.tar</a></li>
<li><a href="//elsewhere.example/data/tars/z.tar">z.tar</a></li>
<!-- <a href="commented.tar"> -->
</ul>
<hr>
</body>
</html>
)",
  };
  int k = 0;
  for (const char* page : pages)
    std::ofstream(std::string(argv[1]) + "/" + std::to_string(k++)) << page;
  return 0;
}
