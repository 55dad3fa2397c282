post = Post.create!(title: "Hello", body: "First post", published: true)
post.comments.create!(body: "Nice post")
Post.create!(title: "Draft", body: "Not yet", published: false)
Billing::Invoice.create!(number: "INV-1", amount: 12.5)
